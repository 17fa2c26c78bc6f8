// sprof top's screen: fitted to the terminal, sorted rows as the session gives them.

#include <sstream>

#include <catch2/catch.hpp>

#include "sprof/top_render.hpp"

using namespace sprof;

TEST_CASE("top screen fits an 80x24 terminal and marks the sort key") {
  live::TopView view;
  view.header.pid = 42;
  view.header.python = "3.11.7";
  view.header.processes = 1;
  view.header.threads = 2;
  view.header.samples = 1234;
  view.header.status = "running";
  view.header.step = 17;
  view.header.mode = "train";
  view.header.steps_per_s = 3.5;
  view.header.cpu_share = 0.97;
  for (int i = 0; i < 40; ++i) {
    live::TopRow r;
    r.function = "function_with_a_rather_long_name_" + std::to_string(i);
    r.file = "/very/long/path/to/some/module/in/a/deep/package/tree.py";
    r.line = i + 1;
    r.own_share = 0.5 / (i + 1);
    r.total_share = 0.9 / (i + 1);
    r.own_s = 10.0 / (i + 1);
    r.total_s = 20.0 / (i + 1);
    view.rows.push_back(r);
  }
  render::TopScreenOptions options;
  options.target = "python train.py";
  options.sort = live::TopSort::total;
  std::string screen = render::top_screen(view, options);
  std::istringstream in(screen);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  CHECK(lines.size() == 24);
  for (const auto& l : lines) CHECK(l.size() <= 80);
  CHECK(lines[0].find("Python 3.11.7") != std::string::npos);
  CHECK(lines[1].find("step 17 (train), 3.50 steps/s") != std::string::npos);
  CHECK(lines[1].find("CPU 97%") != std::string::npos);
  CHECK(lines[2].find("t total*") != std::string::npos);
  CHECK(lines[2].starts_with("GPU: none | keys:"));
  CHECK(lines[5].find("function_with_a_rather_long_name_0 ") != std::string::npos);
  CHECK(lines[5].find(" 50.0%") != std::string::npos);
  // No step seen, nothing sampled yet.
  live::TopView empty;
  std::string blank = render::top_screen(empty, {});
  CHECK(blank.find("steps: none seen") != std::string::npos);
  CHECK(blank.find("(no samples yet)") != std::string::npos);
}

TEST_CASE("top screen shows each GPU's utilization, or the mean and busiest of many") {
  live::TopView view;
  view.header.gpu_known = true;
  view.header.gpu_utilization = {90, 45.4};
  CHECK(render::top_screen(view, {}).find("\nGPU 90% 45% | keys: o own*") != std::string::npos);
  view.header.gpu_utilization = {10, 20, 30, 40, 50, 60, 70, 80};
  CHECK(render::top_screen(view, {}).find("\nGPU mean 45% max 80% (8 GPUs) | keys:") != std::string::npos);
  view.header.gpu_utilization.clear();  // NVML loaded, no answer this time
  CHECK(render::top_screen(view, {}).find("\nGPU ? | keys:") != std::string::npos);
}

TEST_CASE("top screen shows names the program chose without their control characters (issue 29, defect 9)") {
  live::TopView view;
  live::TopRow r;
  r.function = "\x1b[2J\x1b]0;PWNED\x07" "clear";
  r.file = "split\nrow.py";
  r.line = 1;
  r.own_share = r.total_share = 1;
  view.rows.push_back(r);
  render::TopScreenOptions options;
  options.target = "python \x1b[31mred";
  std::string screen = render::top_screen(view, options);
  for (char c : screen) CHECK((c == '\n' || static_cast<unsigned char>(c) >= 0x20));
  CHECK(screen.find("?[2J?]0;PWNED?clear (split?row.py:1)") != std::string::npos);
  CHECK(screen.find("python ?[31mred") != std::string::npos);
}
