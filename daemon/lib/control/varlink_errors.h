// The Varlink error names the control socket uses: the standard ones of
// org.varlink.service (as systemd's varlinkctl knows them) and those declared
// in io.infervisor.Supervisor.varlink.
#pragma once

#include <string_view>

namespace infervisor::varlink_error {

inline constexpr std::string_view kInterfaceNotFound = "org.varlink.service.InterfaceNotFound";
inline constexpr std::string_view kMethodNotFound = "org.varlink.service.MethodNotFound";
inline constexpr std::string_view kInvalidParameter = "org.varlink.service.InvalidParameter";
inline constexpr std::string_view kExpectedMore = "org.varlink.service.ExpectedMore";

inline constexpr std::string_view kWorkerNotFound = "io.infervisor.Supervisor.WorkerNotFound";
inline constexpr std::string_view kPermissionDenied = "io.infervisor.Supervisor.PermissionDenied";
inline constexpr std::string_view kConfigInvalid = "io.infervisor.Supervisor.ConfigInvalid";
inline constexpr std::string_view kActionFailed = "io.infervisor.Supervisor.ActionFailed";
inline constexpr std::string_view kProtocolError = "io.infervisor.Supervisor.ProtocolError";
// Sent instead of any reply to a connection over a ConnectionQuota limit,
// with parameters {scope: "uid"|"total", limit: int}; then the server closes.
inline constexpr std::string_view kTooManyConnections =
    "io.infervisor.Supervisor.TooManyConnections";

// Validate could not check the text now: too many checks at once, or the
// check overran its deadline; {reason: string}.
inline constexpr std::string_view kValidationFailed = "io.infervisor.Supervisor.ValidationFailed";
// The reply would exceed the connection's output limit; {size: int, limit: int}.
inline constexpr std::string_view kReplyTooLarge = "io.infervisor.Supervisor.ReplyTooLarge";

}  // namespace infervisor::varlink_error
