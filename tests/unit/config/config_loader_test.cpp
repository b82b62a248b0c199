#include "config/config_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace infervisor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ConfigLoader, ReadsMainFileThenDropinsInNameOrder) {
    testing::TempDir dir;
    dir.write("infervisor.yaml", "defaults:\n  memory: {max: 1G}\n");
    dir.write("workers.d/20-b.yaml", "workers:\n  - {name: b, command: [/bin/b]}\n");
    dir.write("workers.d/10-a.yaml", "workers:\n  - {name: a, command: [/bin/a]}\n");
    dir.write("workers.d/README", "not yaml");
    dir.write("workers.d/.hidden.yaml", "garbage: [");
    auto loaded = load_config({dir.path() / "infervisor.yaml", {}});
    ASSERT_TRUE(loaded.ok()) << loaded.errors.format();
    ASSERT_EQ(loaded.config.workers.size(), 2u);
    EXPECT_EQ(loaded.config.workers[0].name, "a");
    EXPECT_EQ(loaded.config.workers[1].name, "b");
    EXPECT_EQ(*loaded.config.workers[1].memory.max, 1ull << 30);  // defaults reach drop-ins
    EXPECT_EQ(loaded.config.files.size(), 3u);
}

TEST(ConfigLoader, DropinsMayOnlyDefineWorkers) {
    testing::TempDir dir;
    dir.write("infervisor.yaml", "");
    dir.write("workers.d/a.yaml", "log_level: debug\n");
    auto loaded = load_config({dir.path() / "infervisor.yaml", {}});
    auto file = (dir.path() / "workers.d/a.yaml").string();
    EXPECT_THAT(loaded.errors.format(),
                HasSubstr(file + ":1:1: unknown key 'log_level' in a workers file"));
}

TEST(ConfigLoader, DuplicatesAcrossFilesNameBothPlaces) {
    testing::TempDir dir;
    dir.write("main.yaml", "workers:\n  - {name: a, command: [/bin/a], memory: {max: 1G}}\n");
    dir.write("w/x.yaml", "\nworkers:\n  - {name: a, command: [/bin/a], memory: {max: 1G}}\n");
    auto loaded = load_config({dir.path() / "main.yaml", dir.path() / "w"});
    ASSERT_EQ(loaded.errors.all().size(), 1u);
    EXPECT_EQ(loaded.errors.all()[0].format(),
              (dir.path() / "w/x.yaml").string() +
                  ":3:5: duplicate worker name 'a' (first defined at " +
                  (dir.path() / "main.yaml").string() + ":2:5)");
}

TEST(ConfigLoader, MissingMainFileIsAnError) {
    testing::TempDir dir;
    auto loaded = load_config({dir.path() / "nope.yaml", {}});
    EXPECT_FALSE(loaded.ok());
    EXPECT_THAT(loaded.errors.format(), HasSubstr("nope.yaml: cannot read: open"));
    EXPECT_THAT(loaded.errors.format(), HasSubstr("No such file or directory"));
}

// Issue 27, point 2: `config check` sends the texts of the main file and its
// drop-ins; checked as texts they get the verdict the files get.
TEST(ConfigLoader, TextsReadFromFilesLoadAsTheFilesDo) {
    testing::TempDir dir;
    dir.write("main.yaml", "workers:\n  - {name: a, command: [/bin/a], memory: {max: 1G}}\n");
    dir.write("workers.d/x.yaml", "log_level: debug\n");
    dir.write("workers.d/y.yaml",
              "workers:\n  - {name: a, command: [/bin/a], memory: {max: 1G}}\n");
    ConfigSource source{dir.path() / "main.yaml", {}};
    ConfigErrors read_errors;
    auto texts = read_config_texts(source, read_errors);
    EXPECT_TRUE(read_errors.empty()) << read_errors.format();
    ASSERT_EQ(texts.dropins.size(), 2u);
    EXPECT_EQ(texts.dropins[0].file, (dir.path() / "workers.d/x.yaml").string());
    auto from_texts = load_config_texts(texts, {}, read_errors);
    auto from_files = load_config(source);
    ASSERT_EQ(from_files.errors.all().size(), 2u) << from_files.errors.format();
    EXPECT_EQ(from_texts.errors.lines(), from_files.errors.lines());
}

TEST(ConfigLoader, AnUnreadableDropinIsAnErrorAndTheOthersAreRead) {
    testing::TempDir dir;
    dir.write("main.yaml", "");
    dir.write("workers.d/b.yaml",
              "workers:\n  - {name: b, command: [/bin/b], memory: {max: 1G}}\n");
    std::filesystem::create_directories(dir.path() / "workers.d/a.yaml");
    ConfigErrors errors;
    auto texts = read_config_texts({dir.path() / "main.yaml", {}}, errors);
    ASSERT_EQ(texts.dropins.size(), 1u);
    EXPECT_THAT(errors.format(), HasSubstr("workers.d/a.yaml: cannot read: "));
    EXPECT_THAT(errors.format(), HasSubstr("not a regular file"));
}

// Texts from a caller are held to the limits files are held to.
TEST(ConfigLoader, TextsFromACallerAreHeldToTheFileLimits) {
    ConfigTexts many{{"m.yaml", ""}, {}};
    many.dropins.assign(1025, ConfigText{"d.yaml", ""});
    EXPECT_THAT(load_config_texts(many).errors.format(),
                HasSubstr("m.yaml: its workers directory holds more than 1024 *.yaml files"));
    ConfigTexts large{{"m.yaml", ""}, {}};
    large.dropins.assign(9, ConfigText{"d.yaml", std::string(1 << 20, '#')});
    EXPECT_THAT(load_config_texts(large).errors.format(),
                HasSubstr("d.yaml: not read: the configuration files together are larger than 8 "
                          "MiB"));
    ConfigTexts one{{"m.yaml", ""}, {{"d.yaml", std::string((1 << 20) + 1, '#')}}};
    EXPECT_THAT(load_config_texts(one).errors.format(),
                HasSubstr("d.yaml: the configuration text is larger than 1024 KiB"));
}

TEST(ConfigLoader, ShippedConfigAndExampleWorkersAreValid) {
    // etc/infervisor.yaml is what a package installs; the demo workers
    // (configured into the build dir) are what the README's demo runs, and
    // torch-worker.yaml the example on python3-torch.
    const char* src = std::getenv("INFERVISOR_SOURCE_ROOT");
    const char* build = std::getenv("INFERVISOR_BUILD_ROOT");
    ASSERT_NE(src, nullptr);
    ASSERT_NE(build, nullptr);
    auto loaded = load_config(
        {std::filesystem::path(src) / "etc/infervisor.yaml", std::filesystem::path(build) / "etc"});
    EXPECT_TRUE(loaded.ok()) << loaded.errors.format();
    ASSERT_EQ(loaded.config.workers.size(), 3u);
    EXPECT_EQ(loaded.config.workers[0].name, "chat");
    EXPECT_EQ(loaded.config.workers[1].name, "leaky");
    EXPECT_EQ(loaded.config.workers[2].name, "torch-chat");
}

TEST(ConfigLoader, EngineExamplesAreValid) {
    // etc/examples/llama-server.yaml, ollama.yaml and vllm.yaml, as a user
    // copies them into workers.d beside the shipped main file: valid, and what they say they
    // set up (the program paths are warnings here: no llama-server or vllm on
    // a build host).
    const char* src = std::getenv("INFERVISOR_SOURCE_ROOT");
    ASSERT_NE(src, nullptr);
    const std::filesystem::path examples = std::filesystem::path(src) / "etc/examples";
    testing::TempDir dir;
    const auto workers = dir.mkdir("workers.d");
    for (const char* name : {"llama-server.yaml", "ollama.yaml", "vllm.yaml"})
        std::filesystem::copy_file(examples / name, workers / name);
    auto loaded = load_config({std::filesystem::path(src) / "etc/infervisor.yaml", workers});
    EXPECT_TRUE(loaded.ok()) << loaded.errors.format();
    ASSERT_EQ(loaded.config.workers.size(), 3u);
    const WorkerSpec& llama = loaded.config.workers[0];
    EXPECT_EQ(llama.name, "llama");
    ASSERT_TRUE(llama.engine.has_value());
    EXPECT_EQ(llama.engine->kind, EngineKind::llama_server);
    EXPECT_EQ(llama.checkpoint.method, CheckpointMethod::llama_server);
    const WorkerSpec& ollama = loaded.config.workers[1];
    EXPECT_EQ(ollama.name, "ollama");
    ASSERT_TRUE(ollama.engine.has_value());
    EXPECT_EQ(ollama.engine->kind, EngineKind::ollama);
    EXPECT_EQ(ollama.engine->port, 11434);
    const WorkerSpec& vllm = loaded.config.workers[2];
    EXPECT_EQ(vllm.name, "vllm");
    ASSERT_TRUE(vllm.engine.has_value());
    EXPECT_EQ(vllm.engine->kind, EngineKind::vllm);
    EXPECT_EQ(vllm.suspend.method, SuspendMethod::vllm_sleep);
    EXPECT_EQ(vllm.suspend.level, 1);
    for (const WorkerSpec* w : {&llama, &vllm}) {
        ASSERT_FALSE(w->rules.empty()) << w->name;
        EXPECT_THAT(w->rules.back().when.text, HasSubstr("engine.rate(")) << w->name;
    }
}

}  // namespace
}  // namespace infervisor
