// model_write.cpp — see model_write.h.
#include "ir/model_write.h"

#include <fmt/format.h>

namespace ps {

namespace {

// "  key: value", and its comment aligned at column 41 (or after one blank when the line is longer).
std::string aligned_line(const YamlItem& item, int indent) {
  std::string line = fmt::format("{:{}}{}: {}", "", indent, item.key, item.value);
  if (!item.comment.empty()) line = fmt::format("{:<40}# {}", line + " ", item.comment);
  return line + "\n";
}

// "  key: value  # comment".
std::string commented_line(const YamlItem& item, int indent) {
  std::string line = fmt::format("{:{}}{}: {}", "", indent, item.key, item.value);
  if (!item.comment.empty()) line += "  # " + item.comment;
  return line + "\n";
}

}  // namespace

std::string format_flow_map(const std::vector<YamlItem>& items) {
  std::string s = "{";
  for (size_t i = 0; i < items.size(); ++i) s += fmt::format("{}{}: {}", i ? ", " : "", items[i].key, items[i].value);
  return s + "}";
}

std::string format_model_yaml(const ModelDocument& doc) {
  std::string y = doc.header;
  y += "schema: 1\nmodel:\n";
  y += fmt::format("  name: {}\n", doc.name);
  if (!doc.architecture.empty()) {
    y += "  architecture:\n";
    for (const YamlItem& a : doc.architecture) y += aligned_line(a, 4);
  }
  if (!doc.hardware.empty()) y += fmt::format("  hardware: {}\n", format_flow_map(doc.hardware));
  y += "  layer_types:\n";
  for (const YamlItem& t : doc.layer_types) y += commented_line(t, 4);
  if (doc.layer_string) {
    y += fmt::format("  layers: {}\n", *doc.layer_string);
  } else {
    y += "  layers:\n";
    for (const std::vector<YamlItem>& e : doc.layer_entries) y += "    - " + format_flow_map(e) + "\n";
  }
  y += doc.cluster_note;
  if (!doc.cluster.empty()) y += commented_line({"cluster", format_flow_map(doc.cluster), doc.cluster_comment}, 0);
  if (!doc.pipeline.empty()) {
    y += "pipeline:\n";
    for (const YamlItem& p : doc.pipeline) y += commented_line(p, 2);
  }
  if (!doc.parallel.empty()) {
    y += "parallel:\n";
    for (const YamlItem& p : doc.parallel) y += commented_line(p, 2);
  }
  return y;
}

}  // namespace ps
