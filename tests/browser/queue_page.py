#!/usr/bin/python3
"""The repair queue's page in a real browser (Debian's chromium, chromium-driver, python3-selenium).

Run by tests/browser/browser_test.cpp against medicd on fabsim with a real PostgreSQL:

  queue_page.py URL OPERATOR_TOKEN VIEWER_TOKEN INCIDENT_ID SCREENSHOT_DIR

An operator signs in, sees the waiting incident in the queue, opens its page (timeline,
evidence, snapshot diff, what-if, runbook), approves it with a reason, and sees the drain
happen; a viewer who follows an alert's link to the incident's page signed out is asked for
the token and then shown that incident; a viewer sees no action button, reads the SLO report at /slo, and a POST forged with
the viewer's token is refused.
No page may log a console error. Screenshots of the queue and of the incident's page go to
SCREENSHOT_DIR. Exits 0 when every check held; otherwise prints what failed and exits 1.
"""
import json
import sys
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.support.ui import WebDriverWait


def wait_for(d, seconds):
    """A wait that looks again when the page re-rendered under it: the queue page refreshes
    itself, so an element found a moment ago can be gone when its text is read."""
    return WebDriverWait(d, seconds, ignored_exceptions=(StaleElementReferenceException,))


url, operator_token, viewer_token, incident, shots = sys.argv[1:6]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def browser():
    o = Options()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000",
              "--no-first-run", "--disable-extensions", "--disable-background-networking"):
        o.add_argument(a)
    o.binary_location = "/usr/bin/chromium"
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)


def console_errors(d):
    return [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]


def sign_in(d, token):
    d.get(url + "/")
    wait_for(d, 20).until(ec.visibility_of_element_located((By.ID, "token")))
    d.find_element(By.ID, "token").send_keys(token)
    d.find_element(By.CSS_SELECTOR, "#login-form button[type=submit]").click()
    wait_for(d, 20).until(ec.presence_of_element_located((By.ID, "me-name")))


def row_of(d):
    return d.find_elements(By.CSS_SELECTOR, 'tr[data-incident="%s"]' % incident)


wait_s = 60
d = browser()
try:
    # ---- the operator ----
    sign_in(d, operator_token)
    check(d.find_element(By.ID, "me-role").text == "operator", "signed in as an operator")
    check(d.execute_script("return document.cookie") == "", "no cookie holds the token")
    check(operator_token not in d.current_url, "the token is not in the URL")
    wait_for(d, wait_s).until(lambda d: row_of(d))
    row = row_of(d)[0]
    check("approval" in row.text, "the queue shows the incident waiting for approval: " + row.text)
    check("corruption" in row.text, "the queue shows its class")
    check(len(row.find_elements(By.CSS_SELECTOR, "td.budget")) == 1, "the queue shows its SLO budget")
    check(len(row.find_elements(By.CSS_SELECTOR, "button.act-approve")) == 1, "an operator is offered approve")
    d.save_screenshot(shots + "/queue.png")

    # A half-typed maintenance reason survives the page's own refresh.
    d.find_element(By.ID, "maint-reason").send_keys("typing while it refreshes")
    time.sleep(6)
    check(d.find_element(By.ID, "maint-reason").get_attribute("value") == "typing while it refreshes",
          "what a person types survives the refresh")
    d.find_element(By.ID, "maint-reason").clear()

    # Its own page.
    row_of(d)[0].find_element(By.CSS_SELECTOR, "a").click()
    wait_for(d, 20).until(ec.presence_of_element_located((By.ID, "runbook")))
    text = d.find_element(By.TAG_NAME, "main").text
    check("Incident " + incident in text, "the incident's page opens")
    check("Timeline" in text and "Findings and their evidence" in text, "timeline and findings are shown")
    check(len(d.find_elements(By.CSS_SELECTOR, "details summary")) >= 1, "findings carry their evidence")
    check(d.find_element(By.ID, "whatif-verdict").text in ("allowed", "refused"), "the what-if of the drain is shown")
    check(len(d.find_elements(By.CSS_SELECTOR, "#whatif tbody tr")) >= 1 and "None." not in d.find_element(By.ID, "whatif").text,
          "the what-if lists the capacity groups the drain touches")
    check("What it means" in d.find_element(By.ID, "runbook").text, "the class's runbook is rendered")
    d.find_element(By.CSS_SELECTOR, "#actions button.act-approve").click()
    wait_for(d, 10).until(ec.visibility_of_element_located((By.ID, "decide")))
    d.find_element(By.ID, "decide-reason").send_keys("fcs rising on the receiving end")
    d.find_element(By.ID, "decide-confirm").click()
    wait_for(d, 20).until(lambda d: "approved" in d.find_element(By.ID, "msg").text)
    check(True, "the approval is confirmed: " + d.find_element(By.ID, "msg").text)
    # The drain happens: medicd takes the approved incident on (mitigated, then waiting for repair).
    wait_for(d, wait_s).until(
        lambda d: d.find_element(By.ID, "inc-state").text in ("mitigated", "repair_requested", "validating"))
    check(True, "the drain happened: state " + d.find_element(By.ID, "inc-state").text)
    wait_for(d, wait_s).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#diffs details.diff")) >= 1)
    check("→" in d.find_element(By.ID, "diffs").text, "the snapshots before and after the drain are compared")
    # The whole page, not only the window's first screen.
    d.set_window_size(1400, min(8000, d.execute_script("return document.body.scrollHeight") + 100))
    d.save_screenshot(shots + "/incident.png")
    d.set_window_size(1400, 1000)
    errors = console_errors(d)
    check(not errors, "the operator's pages logged no console error: %s" % errors)

    # ---- the viewer, arriving from an alert ----
    # An alert's runbook_url is the incident's page: followed signed out, it asks for the
    # token and then shows that incident, not the queue.
    d.find_element(By.ID, "sign-out").click()
    d.get(url + "/incidents/" + incident)
    wait_for(d, 20).until(ec.visibility_of_element_located((By.ID, "token")))
    d.find_element(By.ID, "token").send_keys(viewer_token)
    d.find_element(By.CSS_SELECTOR, "#login-form button[type=submit]").click()
    wait_for(d, 20).until(ec.presence_of_element_located((By.ID, "runbook")))
    check("Incident " + incident in d.find_element(By.TAG_NAME, "main").text,
          "an alert's link opened signed out asks for the token, then shows the incident")
    check(d.find_element(By.ID, "me-role").text == "viewer", "signed in as a viewer")
    d.get(url + "/incidents/" + incident)
    wait_for(d, 20).until(ec.presence_of_element_located((By.ID, "runbook")))
    check(not d.find_elements(By.CSS_SELECTOR, "button.act"), "a viewer is offered no action on the incident")
    d.get(url + "/")
    wait_for(d, 20).until(ec.presence_of_element_located((By.ID, "queue")))
    check(not d.find_elements(By.CSS_SELECTOR, "button.act"), "a viewer is offered no action in the queue")
    check(d.find_element(By.ID, "maint-form").get_attribute("hidden") is not None, "a viewer cannot declare maintenance")
    # The SLO report, rendered by medicd and shown with its own stylesheet.
    d.get(url + "/slo?window=1d")
    wait_for(d, 30).until(ec.presence_of_element_located((By.CSS_SELECTOR, "#slo-report article.slo-report")))
    charts = d.find_elements(By.CSS_SELECTOR, "#slo-report svg.chart")
    check(len(charts) == 3, "the SLO page shows the report's three charts (%d)" % len(charts))
    check(all(c.size["width"] > 300 and c.size["height"] > 40 for c in charts), "the charts are drawn at size")
    check("corruption" in d.find_element(By.ID, "slo-report").text, "the SLO report lists the corruption SLOs")
    check(len(d.find_elements(By.CSS_SELECTOR, ".slo-tools button")) == 4, "the SLO page offers four downloads")
    d.set_window_size(1400, min(8000, d.execute_script("return document.body.scrollHeight") + 100))
    d.save_screenshot(shots + "/slo-page.png")
    d.set_window_size(1400, 1000)
    errors = console_errors(d)
    check(not errors, "the viewer's pages logged no console error: %s" % errors)
finally:
    d.quit()

# A POST forged with the viewer's token, as a script would send it.
req = urllib.request.Request(url + "/api/incidents/%s/dismiss" % incident, method="POST",
                             data=json.dumps({"reason": "forged"}).encode(),
                             headers={"Content-Type": "application/json", "Authorization": "Bearer " + viewer_token})
try:
    urllib.request.urlopen(req, timeout=10)
    check(False, "a forged POST with the viewer's token is refused")
except urllib.error.HTTPError as e:
    body = json.loads(e.read())
    check(e.code == 403, "a forged POST with the viewer's token is refused with 403: " + body.get("error", ""))

print("%d checks failed" % len(failures) if failures else "every check held", flush=True)
sys.exit(1 if failures else 0)
