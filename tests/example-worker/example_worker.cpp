// infervisor-example-worker: a fake model server that behaves, or misbehaves,
// on command, so the supervisor can be tested end to end. Needs nothing but
// libc and libstdc++. See --help.
#include <cstdio>

#include "options.h"
#include "worker.h"

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    example_worker::Worker worker(example_worker::parse_options(argc, argv));
    return worker.run();
}
