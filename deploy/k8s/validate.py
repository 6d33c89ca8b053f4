"""Validates Kubernetes manifests offline.

usage: validate.py K8S_VERSION KSERVE_MODELS_DIR FILE.yaml...

Kubernetes' own kinds: kubernetes-validate, strict (unknown fields are
errors), against the schemas of Kubernetes K8S_VERSION it ships.

KServe's kinds (serving.kserve.io ServingRuntime, InferenceService): no schema
ships with kubernetes-validate, so they are checked against KServe's Python
SDK models (KSERVE_MODELS_DIR: kserve/models of the pinned kserve wheel,
generated from KServe's CRD OpenAPI): every field must be one the type has,
of its type (read from each model's `openapi_types` / `attribute_map`, parsed,
not imported). Kubernetes types inside them (a V1Container, ...) go back to
kubernetes-validate, wrapped in a Pod.

Prints one verdict per document; exit 1 when any is invalid.
"""

import ast
import re
import sys
from pathlib import Path

import kubernetes_validate
import yaml

KSERVE_KINDS = {
    ("serving.kserve.io/v1alpha1", "ServingRuntime"): "V1alpha1ServingRuntimeSpec",
    ("serving.kserve.io/v1alpha1", "ClusterServingRuntime"): "V1alpha1ServingRuntimeSpec",
    ("serving.kserve.io/v1beta1", "InferenceService"): "V1beta1InferenceServiceSpec",
}


def snake(name):
    """V1alpha1ServingRuntimeSpec -> v1alpha1_serving_runtime_spec"""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


class KServeModels:
    """Field tables of the SDK's model classes: {json name: type string}."""

    def __init__(self, directory):
        self.directory = Path(directory)
        self.cache = {}

    def fields(self, type_name):
        if type_name not in self.cache:
            path = self.directory / f"{snake(type_name)}.py"
            if not path.is_file():
                raise KeyError(f"no KServe model {type_name} ({path})")
            tables = {}
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                    if node.targets[0].id in ("openapi_types", "attribute_map"):
                        tables[node.targets[0].id] = ast.literal_eval(node.value)
            types, names = tables["openapi_types"], tables["attribute_map"]
            self.cache[type_name] = {names[k]: types[k] for k in types}
        return self.cache[type_name]


def check_value(value, type_name, where, models, version, errors):
    """Checks `value` against the SDK type string `type_name`; appends errors."""
    if type_name.startswith("list[") and type_name.endswith("]"):
        if not isinstance(value, list):
            errors.append(f"{where}: expected a list, got {value!r}")
            return
        for i, item in enumerate(value):
            check_value(item, type_name[5:-1], f"{where}[{i}]", models, version, errors)
        return
    if type_name.startswith("dict("):
        inner = type_name[5:-1].split(", ", 1)[1]
        if not isinstance(value, dict):
            errors.append(f"{where}: expected a map, got {value!r}")
            return
        for k, v in value.items():
            check_value(v, inner, f"{where}.{k}", models, version, errors)
        return
    scalar = {"str": str, "int": int, "bool": bool, "float": (int, float), "object": object}
    if type_name in scalar:
        ok = isinstance(value, scalar[type_name]) and not (type_name == "int" and isinstance(value, bool))
        if not ok:
            errors.append(f"{where}: expected {type_name}, got {value!r}")
        return
    if type_name == "V1Container":
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "check"}, "spec": {"containers": [value]}}
        try:
            kubernetes_validate.validate(pod, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            errors.append(f"{where}: {e.message} (at {'.'.join(map(str, e.path))})")
        return
    if not type_name.startswith("V1alpha1") and not type_name.startswith("V1beta1"):
        errors.append(f"{where}: a {type_name} is not checked by this script: add it")
        return
    if not isinstance(value, dict):
        errors.append(f"{where}: expected a {type_name} object, got {value!r}")
        return
    fields = models.fields(type_name)
    for key, item in value.items():
        if key not in fields:
            errors.append(f"{where}: {type_name} has no field `{key}`")
        else:
            check_value(item, fields[key], f"{where}.{key}", models, version, errors)


def validate(document, version, models):
    """A list of errors (empty: valid)."""
    key = (document.get("apiVersion"), document.get("kind"))
    if key in KSERVE_KINDS:
        errors = []
        for field in document:
            if field not in ("apiVersion", "kind", "metadata", "spec"):
                errors.append(f"unexpected top-level field `{field}`")
        meta = document.get("metadata", {})
        if not isinstance(meta.get("name"), str):
            errors.append("metadata.name is missing")
        check_value(document.get("spec"), KSERVE_KINDS[key], "spec", models, version, errors)
        return errors
    try:
        kubernetes_validate.validate(document, version, strict=True)
    except kubernetes_validate.ValidationError as e:
        return [f"{e.message} (at {'.'.join(map(str, e.path))})"]
    except kubernetes_validate.utils.SchemaNotFoundError as e:
        return [f"no schema for {key[0]} {key[1]} in Kubernetes {version}: {e}"]
    return []


def main():
    version, models_dir, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    models = KServeModels(models_dir)
    failed = 0
    for name in files:
        for i, document in enumerate(yaml.safe_load_all(Path(name).read_text())):
            if document is None:
                continue
            label = f"{name} #{i + 1} {document.get('kind')} {document.get('metadata', {}).get('name')}"
            errors = validate(document, version, models)
            if errors:
                failed += 1
                print(f"INVALID {label}")
                for e in errors:
                    print(f"  {e}")
            else:
                print(f"valid   {label}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
