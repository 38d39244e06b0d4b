"""The OpenAPI document: validation, `$ref` resolution, schemas, the documented pairs and fields."""

from __future__ import annotations

import json
import re

from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from .common import (
    Failure,
    HTTP_METHODS,
    OTHER_METHODS,
    SPEC_URI,
    UNKNOWN_PATH,
    refs_absolute,
)


class Document:
    """The OpenAPI document: validation, `$ref` resolution, schemas, the documented pairs and fields."""

    def __init__(self, path: Path):
        self.path = path
        self.raw = path.read_bytes()
        self.doc = json.loads(self.raw)
        self.registry = Registry().with_resource(SPEC_URI, Resource(contents=self.doc, specification=DRAFT202012))
        self._validators: dict[str, Draft202012Validator] = {}

    def validate_itself(self) -> None:
        if self.doc.get("openapi") != "3.1.0":
            raise Failure(f"{self.path}: openapi is {self.doc.get('openapi')!r}, not 3.1.0")
        try:
            from openapi_spec_validator import validate
        except ImportError:
            raise Failure("openapi-spec-validator is not installed: python3 -m pip install openapi-spec-validator")
        validate(self.doc)
        # Every $ref resolves and every schema is a valid Draft 2020-12 schema.
        for pointer, ref in self._refs(self.doc, ""):
            try:
                self.pointer(ref[1:])
            except (KeyError, IndexError):
                raise Failure(f"{pointer}: $ref {ref} points nowhere")
        for name, schema in self.doc["components"]["schemas"].items():
            Draft202012Validator.check_schema(schema)
        # Every example matches the schema beside it.
        for pointer, media in self._media(self.doc, ""):
            for error in self.errors(media["schema"], media["example"], limit=1):
                raise Failure(f"{pointer}: the example does not match its schema: {error}")

    def _media(self, node: Any, pointer: str):
        if isinstance(node, dict):
            if "schema" in node and "example" in node:
                yield pointer, node
            for key, value in node.items():
                yield from self._media(value, f"{pointer}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                yield from self._media(value, f"{pointer}/{index}")

    def _refs(self, node: Any, pointer: str):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "$ref" and isinstance(value, str):
                    yield pointer, value
                else:
                    yield from self._refs(value, f"{pointer}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                yield from self._refs(value, f"{pointer}/{index}")

    def pointer(self, pointer: str) -> Any:
        node = self.doc
        for part in pointer.strip("/").split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            node = node[int(part)] if isinstance(node, list) else node[part]
        return node

    def resolve(self, node: Any) -> Any:
        """Follows `$ref`s of response and header objects (not of schemas: the validator does those)."""
        seen = 0
        while isinstance(node, dict) and "$ref" in node:
            node = self.pointer(node["$ref"][1:])
            seen += 1
            if seen > 20:
                raise Failure("a $ref cycle")
        return node

    def validator(self, schema: Any) -> Draft202012Validator:
        key = json.dumps(schema, sort_keys=True)
        if key not in self._validators:
            self._validators[key] = Draft202012Validator(
                refs_absolute(schema), registry=self.registry, format_checker=FormatChecker())
        return self._validators[key]

    def schema(self, name: str) -> dict:
        return {"$ref": f"#/components/schemas/{name}"}

    def sealed_errors(self, body: Any) -> list[str]:
        """The plaintext of a sealed answer: a `VerifyAnswer` with status 0."""
        errors = self.errors(self.schema("VerifyAnswer"), body)
        if not errors and body.get("status") != 0:
            errors.append(f"status: {body.get('status')!r}, expected 0")
        return errors

    def errors(self, schema: Any, instance: Any, limit: int = 5) -> list[str]:
        found = sorted(self.validator(schema).iter_errors(instance), key=lambda error: list(error.path))
        messages = []
        for error in found[:limit]:
            location = "/".join(str(part) for part in error.absolute_path) or "(top level)"
            messages.append(f"{location}: {self._brief(error)}")
        return messages

    @staticmethod
    def _brief(error) -> str:
        # anyOf/oneOf errors say little by themselves: name the best sub-error.
        if error.context:
            best = min(error.context, key=lambda sub: len(list(sub.absolute_path)) * -1)
            location = "/".join(str(part) for part in best.absolute_path) or "(top level)"
            return f"matches none of the alternatives ({error.validator}); deepest mismatch at {location}: " \
                   f"{best.message[:200]}"
        return error.message[:300]

    def template(self, path: str) -> str:
        """The documented path a request's path matches (`/verifyReceipt/app_…` → `/verifyReceipt/{token}`), or the
        path itself when none does."""
        if path in self.doc["paths"]:
            return path
        for documented in self.doc["paths"]:
            if "{" in documented:
                pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(documented)) + "$"
                if re.match(pattern, path):
                    return documented
        return path

    # The answer definition for a request.
    def response_for(self, method: str, path: str, status: int) -> tuple[tuple[str, str, int], dict | None]:
        path = self.template(path)
        item = self.doc["paths"].get(path)
        if item is None:
            pair = ("*", UNKNOWN_PATH, status)
            definition = self.doc["x-unknown-path"]["response"] if status == 404 else None
        elif method.lower() in item:
            pair = (method.upper(), path, status)
            responses = item[method.lower()]["responses"]
            definition = responses.get(str(status)) or responses.get(f"{str(status)[0]}XX") or responses.get("default")
        else:
            pair = (OTHER_METHODS, path, status)
            definition = item["x-other-methods"]["response"] if status == 405 else None
        return pair, (self.resolve(definition) if definition is not None else None)

    def request_schema_name(self, route: str, media: str) -> str:
        """The name of the schema the document gives the body of `POST route` in `media` (the route's only one
        when it documents a single media type, as the routes that read JSON whatever the `Content-Type` say)."""
        body = self.resolve(self.doc["paths"][self.template(route)]["post"]["requestBody"])
        content = body["content"]
        schema = (content.get(media) or next(iter(content.values())) if len(content) == 1 else content[media])["schema"]
        return schema["$ref"].rsplit("/", 1)[-1]

    def documented_pairs(self) -> set[tuple[str, str, int]]:
        pairs = {("*", UNKNOWN_PATH, 404)}
        for path, item in self.doc["paths"].items():
            for method in HTTP_METHODS:
                if method in item:
                    pairs |= {(method.upper(), path, int(status)) for status in item[method]["responses"]}
            if "x-other-methods" in item:
                pairs.add((OTHER_METHODS, path, 405))
        return pairs

    def documented_fields(self) -> dict[str, set[str]]:
        """The fields of each closed object schema (`additionalProperties: false`) an answer can carry, read off
        the responses: what coverage asks to see at least once."""
        schemas = self.doc["components"]["schemas"]
        names: set[str] = set()
        pending = [media["schema"] for item in self.doc["paths"].values() for method in HTTP_METHODS
                   if method in item for response in item[method]["responses"].values()
                   for media in self.resolve(response).get("content", {}).values() if "schema" in media]
        while pending:
            node = pending.pop()
            if isinstance(node, dict):
                ref = node.get("$ref", "")
                if ref.startswith("#/components/schemas/"):
                    name = ref.rsplit("/", 1)[-1]
                    if name not in names:
                        names.add(name)
                        pending.append(schemas[name])
                    continue
                pending.extend(value for key, value in node.items() if key not in ("if", "not"))
            elif isinstance(node, list):
                pending.extend(node)
        return {name: set(schemas[name]["properties"]) for name in names
                if "properties" in schemas[name] and schemas[name].get("additionalProperties") is False}

    def record_fields(self, schema: Any, value: Any, fields: dict[str, set[str]]) -> None:
        """Adds to `fields` the members `value` carries of each closed object schema it meets, walking `schema`
        (through `$ref`s, properties, items, and the branches of oneOf/anyOf that `value` matches)."""
        if not isinstance(schema, dict):
            return
        ref = schema.get("$ref", "")
        if ref.startswith("#/components/schemas/"):
            name = ref.rsplit("/", 1)[-1]
            if name in fields and isinstance(value, dict):
                fields[name] |= set(value)
            schema = self.doc["components"]["schemas"][name]
        for branch in schema.get("allOf", []):
            self.record_fields(branch, value, fields)
        for key in ("oneOf", "anyOf"):
            for branch in schema.get(key, []):
                if not self.errors(branch, value, limit=1):
                    self.record_fields(branch, value, fields)
        if isinstance(value, dict):
            properties = schema.get("properties", {})
            for member, item in value.items():
                if member in properties:
                    self.record_fields(properties[member], item, fields)
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            for item in value:
                self.record_fields(schema["items"], item, fields)
