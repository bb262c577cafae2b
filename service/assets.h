// Files compiled into medicd: the repair queue's page (index.html, app.js, app.css) and the
// runbooks ("runbooks/link_flap.md"), so the page works without any file beside the binary.
#pragma once

#include <optional>
#include <string_view>

namespace medic::service {

std::optional<std::string_view> asset(std::string_view name);

}  // namespace medic::service
