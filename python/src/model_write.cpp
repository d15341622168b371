// model_write.cpp — the one model-YAML writer (ir/model_write.h) for Python: `format_model_yaml(document,
// header)` writes a model document held as Python values (what yaml.safe_load gives for a model file:
// the top-level schema/model/cluster/pipeline/parallel, model's name/architecture/hardware/layer_types/
// layers) in the layout every model file pipesmith writes has. Scalars are formatted by the core
// (yamlu::format_number, yamlu::quote_scalar; float_text below), nested maps and lists as flow
// collections, so a value reads back as the value given. `pipesmith.torch.profile_yaml` writes the profiled model through it.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <fmt/format.h>

#include <string>
#include <vector>

#include "common.h"
#include "ir/model_write.h"
#include "ir/yaml_util.h"

namespace ps::py {

namespace {

[[noreturn]] void refuse(const std::string& where, const std::string& what) {
  raise_status(Status::bad_input(fmt::format("format_model_yaml: {}: {}", where, what)));
}

std::string text_of(nb::handle key, const std::string& where) {
  if (!nb::isinstance<nb::str>(key)) refuse(where, "a key must be a string");
  return nb::cast<std::string>(key);
}

// A float as yamlu::format_number prints it, with ".0" before a bare exponent ("8e-05" -> "8.0e-05"):
// YAML 1.1 readers (PyYAML, which the Python side and bench/ read profiles with) take a number without
// a dot for a string; yaml-cpp reads both as the same double.
std::string float_text(double v) {
  std::string s = yamlu::format_number(v);
  const size_t e = s.find('e');
  if (e != std::string::npos && s.find('.') == std::string::npos) s.insert(e, ".0");
  return s;
}

// The YAML text of one value: a scalar, or a flow map / flow sequence of values.
std::string value_text(nb::handle v, const std::string& where);

std::vector<YamlItem> items_of(nb::handle map, const std::string& where) {
  if (!nb::isinstance<nb::dict>(map)) refuse(where, "expected a mapping");
  std::vector<YamlItem> items;
  for (auto [k, v] : nb::borrow<nb::dict>(map)) {
    const std::string key = text_of(k, where);
    items.emplace_back(yamlu::quote_scalar(key), value_text(v, where + "." + key));
  }
  return items;
}

std::string value_text(nb::handle v, const std::string& where) {
  if (v.is_none()) return "null";
  if (nb::isinstance<nb::bool_>(v)) return nb::cast<bool>(v) ? "true" : "false";
  if (nb::isinstance<nb::int_>(v)) return nb::cast<std::string>(nb::str(v));  // any size, in decimal
  if (nb::isinstance<nb::float_>(v)) return float_text(nb::cast<double>(v));
  if (nb::isinstance<nb::str>(v)) return yamlu::quote_scalar(nb::cast<std::string>(v));
  if (nb::isinstance<nb::dict>(v)) return format_flow_map(items_of(v, where));
  if (nb::isinstance<nb::list>(v) || nb::isinstance<nb::tuple>(v)) {
    std::string s = "[";
    size_t i = 0;
    for (nb::handle x : v) {
      s += (i ? ", " : "") + value_text(x, fmt::format("{}[{}]", where, i));
      ++i;
    }
    return s + "]";
  }
  refuse(where, fmt::format("a value of type {} has no YAML form", nb::type_name(v.type()).c_str()));
}

// The keys of `map` must be among `allowed` (the model reader's, ir/model.cpp): a key the writer has no
// place for is refused rather than dropped.
nb::dict section(nb::handle map, const std::string& where, std::initializer_list<const char*> allowed) {
  if (!nb::isinstance<nb::dict>(map)) refuse(where, "expected a mapping");
  nb::dict d = nb::borrow<nb::dict>(map);
  for (auto [k, v] : d) {
    const std::string key = text_of(k, where);
    bool ok = false;
    for (const char* a : allowed) ok = ok || key == a;
    if (!ok) refuse(where, fmt::format("key '{}' is not part of a model file (docs/inputs.md)", key));
  }
  return d;
}

std::string format_model(nb::handle document, const std::string& header) {
  nb::dict doc = section(document, "document", {"schema", "model", "cluster", "pipeline", "parallel"});
  if (doc.contains("schema") && value_text(doc["schema"], "schema") != "1") refuse("schema", "must be 1");
  if (!doc.contains("model")) refuse("document", "no 'model' mapping");
  nb::dict model = section(doc["model"], "model", {"name", "architecture", "hardware", "layer_types", "layers"});
  ModelDocument d;
  d.header = header;
  if (!d.header.empty() && d.header.back() != '\n') d.header += '\n';
  if (!model.contains("name") || !nb::isinstance<nb::str>(model["name"])) refuse("model.name", "expected a string");
  d.name = value_text(model["name"], "model.name");
  if (model.contains("architecture")) d.architecture = items_of(model["architecture"], "model.architecture");
  if (model.contains("hardware")) d.hardware = items_of(model["hardware"], "model.hardware");
  if (model.contains("layer_types"))
    for (const YamlItem& t : items_of(model["layer_types"], "model.layer_types"))
      d.layer_types.emplace_back(t.key, t.value);
  if (!model.contains("layers")) refuse("model", "no 'layers'");
  nb::handle layers = model["layers"];
  if (nb::isinstance<nb::str>(layers)) {
    d.layer_string = value_text(layers, "model.layers");
  } else if (nb::isinstance<nb::list>(layers)) {
    size_t i = 0;
    for (nb::handle e : layers) d.layer_entries.push_back(items_of(e, fmt::format("model.layers[{}]", i++)));
  } else {
    refuse("model.layers", "expected a string of symbols or a list of entries");
  }
  if (doc.contains("cluster")) d.cluster = items_of(doc["cluster"], "cluster");
  if (doc.contains("pipeline")) d.pipeline = items_of(doc["pipeline"], "pipeline");
  if (doc.contains("parallel")) d.parallel = items_of(doc["parallel"], "parallel");
  return format_model_yaml(d);
}

}  // namespace

void bind_model_write(nb::module_& m) {
  m.def("format_model_yaml", &format_model, nb::arg("document"), nb::arg("header") = "",
        "A model document (a dict as yaml.safe_load gives it: schema, model, cluster, pipeline, parallel) as "
        "the text of a model YAML file in the layout of every model file pipesmith writes (ir/model_write.h), "
        "`header` (comment lines) first. A key a model file cannot hold is a BadInputError.");
}

}  // namespace ps::py
