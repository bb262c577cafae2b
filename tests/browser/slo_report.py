#!/usr/bin/python3
"""The SLO report's self-contained HTML file in a real browser (Debian's chromium).

Run by tests/browser/browser_test.cpp on the file `medic slo report --format html` wrote:

  slo_report.py REPORT_HTML SCREENSHOT_DIR

It loads with no console error and fetches nothing (no resource requests at all), shows its
three SVG charts at size with their bars, boxes and lines, and prints on A4 (Chrome's own
print to PDF, kept beside the screenshot). Exits 0 when every check held.
"""
import base64
import sys

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

report, shots = sys.argv[1:3]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


o = Options()
for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1000,1000",
          "--no-first-run", "--disable-extensions", "--disable-background-networking"):
    o.add_argument(a)
o.binary_location = "/usr/bin/chromium"
o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
try:
    d.get("file://" + report)
    check(d.title.startswith("SLO compliance"), "the report loads: " + d.title)
    charts = d.find_elements(By.CSS_SELECTOR, "svg.chart")
    check(len(charts) == 3, "three charts (%d)" % len(charts))
    check(all(c.size["width"] > 300 and c.size["height"] > 40 for c in charts), "every chart is drawn at size")
    check(len(d.find_elements(By.CSS_SELECTOR, "svg.chart rect.bar")) > 0, "the weekly chart has its bars")
    check(len(d.find_elements(By.CSS_SELECTOR, "svg.chart rect.box")) > 0, "the stage-time chart has its boxes")
    check(len(d.find_elements(By.CSS_SELECTOR, "svg.chart polyline.series")) > 0, "the burn-down has its lines")
    resources = d.execute_script("return performance.getEntriesByType('resource').length")
    check(resources == 0, "nothing fetched (%d resource requests)" % resources)
    errors = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
    check(not errors, "no console error: %s" % errors)
    d.set_window_size(1000, min(8000, d.execute_script("return document.body.scrollHeight") + 100))
    d.save_screenshot(shots + "/slo-report.png")
    pdf = d.execute_cdp_cmd("Page.printToPDF", {"paperWidth": 8.27, "paperHeight": 11.69, "preferCSSPageSize": True,
                                                "printBackground": True})
    data = base64.b64decode(pdf["data"])
    with open(shots + "/slo-report.pdf", "wb") as f:
        f.write(data)
    pages = data.count(b"/Type /Page") - data.count(b"/Type /Pages")
    check(data.startswith(b"%PDF") and pages >= 1, "it prints on A4 (%d pages)" % pages)
finally:
    d.quit()

print("%d checks failed" % len(failures) if failures else "every check held", flush=True)
sys.exit(1 if failures else 0)
