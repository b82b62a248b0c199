// DeletionLogLimit: how many deletion entries one worker may put in the
// journal — a LogLimit keyed by worker name (base/log_limit.h).
#pragma once

#include "base/log_limit.h"

namespace infervisor {

using DeletionLogLimit = LogLimit;

}  // namespace infervisor
