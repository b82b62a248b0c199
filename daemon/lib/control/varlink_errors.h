// The Varlink error names the control socket uses: the standard ones of
// org.varlink.service (as systemd's varlinkctl knows them) and those declared
// in io.infervisor.supervisor.varlink.
#pragma once

#include <string_view>

namespace infervisor::varlink_error {

inline constexpr std::string_view kInterfaceNotFound = "org.varlink.service.InterfaceNotFound";
inline constexpr std::string_view kMethodNotFound = "org.varlink.service.MethodNotFound";
inline constexpr std::string_view kInvalidParameter = "org.varlink.service.InvalidParameter";
inline constexpr std::string_view kExpectedMore = "org.varlink.service.ExpectedMore";
// The caller may read but not change things.
inline constexpr std::string_view kPermissionDenied = "org.varlink.service.PermissionDenied";

inline constexpr std::string_view kWorkerNotFound = "io.infervisor.supervisor.WorkerNotFound";
inline constexpr std::string_view kConfigInvalid = "io.infervisor.supervisor.ConfigInvalid";
inline constexpr std::string_view kActionFailed = "io.infervisor.supervisor.ActionFailed";
inline constexpr std::string_view kProtocolError = "io.infervisor.supervisor.ProtocolError";
// Sent instead of any reply to a connection over a ConnectionQuota limit,
// with parameters {scope: "uid"|"total", limit: int}; then the server closes.
inline constexpr std::string_view kTooManyConnections =
    "io.infervisor.supervisor.TooManyConnections";

// Validate could not check the text now: too many checks at once, or the
// check overran its deadline; {reason: string}.
inline constexpr std::string_view kValidationFailed = "io.infervisor.supervisor.ValidationFailed";
// The reply would exceed the connection's output limit; {size: int, limit: int}.
inline constexpr std::string_view kReplyTooLarge = "io.infervisor.supervisor.ReplyTooLarge";

}  // namespace infervisor::varlink_error
