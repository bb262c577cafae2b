#include "common/url.h"

#include <gtest/gtest.h>

namespace medic {
namespace {

TEST(HideUrlPasswords, ThePasswordOfEachUrlIsHidden) {
  EXPECT_EQ(hide_url_passwords("postgresql://medic:s3cret@db1:5432/medic", "/"), "postgresql://medic:***@db1:5432/medic");
  EXPECT_EQ(hide_url_passwords("a https://u:p@h1/x and http://v:q@h2?y", "/?#\"' ,]"),
            "a https://u:***@h1/x and http://v:***@h2?y");
  // The last '@' of the authority ends the userinfo: an '@' in the password is hidden too.
  EXPECT_EQ(hide_url_passwords("http://u:p@ss@h/", "/?#"), "http://u:***@h/");
}

TEST(HideUrlPasswords, NothingElseChanges) {
  EXPECT_EQ(hide_url_passwords("http://h:8080/path@x", "/?#"), "http://h:8080/path@x");  // '@' after the path
  EXPECT_EQ(hide_url_passwords("http://user@h/", "/?#"), "http://user@h/");              // no password
  EXPECT_EQ(hide_url_passwords("no url here: a@b", "/?#"), "no url here: a@b");
  EXPECT_EQ(hide_url_passwords("", "/?#"), "");
  EXPECT_EQ(hide_url_passwords("http://", "/?#"), "http://");
  EXPECT_EQ(hide_url_passwords("http://@", "/?#"), "http://@");
}

TEST(HideUrlPasswords, ABareAuthorityOnlyWhenAsked) {
  EXPECT_EQ(hide_url_passwords("u:p@h:80", "/?#", true), "u:***@h:80");
  EXPECT_EQ(hide_url_passwords("u:p@h:80", "/?#"), "u:p@h:80");
}

TEST(UrlAuthority, StartEndAndTheUserinfosEnd) {
  const std::string url = "https://user:pw@198.18.0.9:9093/services?x=1";
  const UrlAuthority a = url_authority(url, url.find("://"), "/?#");
  EXPECT_EQ(url.substr(a.start, a.end - a.start), "user:pw@198.18.0.9:9093");
  EXPECT_EQ(a.at, url.find('@'));
  const UrlAuthority none = url_authority("http://h/a@b", 4, "/?#");
  EXPECT_EQ(none.at, std::string_view::npos);
  const UrlAuthority cut = url_authority("x://", 1, "/?#");  // nothing after the scheme
  EXPECT_EQ(cut.start, cut.end);
}

}  // namespace
}  // namespace medic
