#include "sprof/top_render.hpp"

#include <fmt/format.h>

#include "sprof/markup.hpp"

namespace sprof::render {
namespace {

std::string fit(std::string text, size_t width) {
  if (text.size() > width) text.resize(width);
  return text;
}

std::string duration(double s) {
  if (s < 60) return fmt::format("{:.2f}s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", int(s / 60), int(s) % 60);
  return fmt::format("{}h{:02d}m", int(s / 3600), int(s / 60) % 60);
}

// "GPU 90% 45%", the mean and the busiest of more than four, or why there is none.
std::string gpu_text(const live::TopHeader& h) {
  if (!h.gpu_known) return "GPU: none";
  const auto& u = h.gpu_utilization;
  if (u.empty()) return "GPU ?";
  if (u.size() <= 4) {
    std::string text = "GPU";
    for (double v : u) text += fmt::format(" {:.0f}%", v);
    return text;
  }
  double sum = 0, most = 0;
  for (double v : u) {
    sum += v;
    most = std::max(most, v);
  }
  return fmt::format("GPU mean {:.0f}% max {:.0f}% ({} GPUs)", sum / double(u.size()), most, u.size());
}

}  // namespace

std::string top_screen(const live::TopView& view, const TopScreenOptions& o) {
  const live::TopHeader& h = view.header;
  std::string out;
  auto line = [&](const std::string& text) { out += fit(text, o.width) + "\n"; };
  line(fmt::format("sprof top: {} ({}{}), {}", terminal_safe(o.target), h.python.empty() ? "Python ?" : "Python " + h.python,
                   h.processes > 1 ? fmt::format(", {} processes", h.processes) : "", h.status));
  std::string steps = h.step ? fmt::format("step {} ({}), {:.2f} steps/s", *h.step, h.mode.empty() ? "?" : h.mode,
                                           std::max(h.steps_per_s, 0.0))
                             : std::string("steps: none seen");
  std::string cpu = h.cpu_share >= 0 ? fmt::format("CPU {:.0f}%", 100 * h.cpu_share) : std::string("CPU ?");
  line(fmt::format("{} | {} | threads {} | samples {} | {}", steps, cpu, h.threads, h.samples, duration(h.elapsed_s)));
  const char* mark[] = {"", "", ""};
  int key = o.sort == live::TopSort::own ? 0 : o.sort == live::TopSort::total ? 1 : 2;
  mark[key] = "*";
  line(fmt::format("{} | keys: o own{}  t total{}  n name{}  q quit", gpu_text(h), mark[0], mark[1], mark[2]));
  line("");
  std::string head = fmt::format("{:>6} {:>7} {:>9} {:>10}  {}", "%Own", "%Total", "OwnTime", "TotalTime",
                                 "Function (filename:line)");
  out += o.color ? "\x1b[7m" + fit(head, o.width) + std::string(o.width > head.size() ? o.width - head.size() : 0, ' ') +
                       "\x1b[0m\n"
                 : fit(head, o.width) + "\n";
  size_t used = 5;
  for (const live::TopRow& r : view.rows) {
    if (used >= o.height) break;
    if (r.own_share == 0 && r.total_share == 0 && r.total_s == 0) continue;
    line(fmt::format("{:>5.1f}% {:>6.1f}% {:>9} {:>10}  {} ({}:{})", 100 * r.own_share, 100 * r.total_share,
                     duration(r.own_s), duration(r.total_s), terminal_safe(r.function), terminal_safe(r.file), r.line));
    ++used;
  }
  if (view.rows.empty()) line("(no samples yet)");
  return out;
}

}  // namespace sprof::render
