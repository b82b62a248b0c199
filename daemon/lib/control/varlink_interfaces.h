// The Varlink interface descriptions (IDL) this service implements, embedded
// at build time from io.infervisor.supervisor.varlink and
// org.varlink.service.varlink next to this file.
#pragma once

#include <string_view>

namespace infervisor {

inline constexpr std::string_view kSupervisorInterface = "io.infervisor.supervisor";
inline constexpr std::string_view kServiceInterface = "org.varlink.service";

std::string_view supervisor_interface_description();
std::string_view service_interface_description();

}  // namespace infervisor
