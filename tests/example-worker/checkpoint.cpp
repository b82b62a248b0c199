#include "checkpoint.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace example_worker {

CheckpointOutcome write_checkpoint(const std::string& dir, const std::string& name, long served) {
    std::string path = dir + "/checkpoint";
    std::string temporary = path + ".tmp";
    {
        std::ofstream out(temporary, std::ios::trunc);
        out << "worker=" << name << "\nserved=" << served << "\n";
        out.flush();
        if (!out) return {false, "cannot write " + temporary + ": " + std::strerror(errno)};
    }
    if (std::rename(temporary.c_str(), path.c_str()) != 0)
        return {false, "cannot rename " + temporary + ": " + std::strerror(errno)};
    return {true, path};
}

RestoredCheckpoint read_checkpoint(const std::string& from) {
    std::error_code ec;
    std::string path = std::filesystem::is_directory(from, ec) ? from + "/checkpoint" : from;
    std::ifstream in(path);
    if (!in) return {false, 0, "cannot open " + path + ": " + std::strerror(errno)};
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("served=", 0) == 0) return {true, std::atol(line.c_str() + 7), path};
    }
    return {false, 0, path + " has no served= line"};
}

}  // namespace example_worker
