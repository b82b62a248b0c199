// Prints the example exposition (example_metrics.h), for `promtool check metrics`.
#include <iostream>

#include "example_metrics.h"

int main() {
    infervisor::SupervisorMetrics m;
    infervisor::testing::feed_example(m);
    std::cout << m.render(infervisor::testing::example_daemon_stats());
}
