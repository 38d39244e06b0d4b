#!/usr/bin/env python3
"""Lays out the OpenAPI document by one rule: a value that fits on its line (120 columns) is written on one line,
else its members one per line, indented by two. `scripts/format-openapi.py [FILE]` rewrites FILE (default: the
document served at /openapi.json); `--check` only fails if FILE is not laid out so."""
import json
import sys
from pathlib import Path

DOCUMENT = Path(__file__).resolve().parent.parent / "Sources/ReceiptServer/Operations/openapi.json"
WIDTH = 120


def layout(node, indent=0, prefix=0):
    text = json.dumps(node, ensure_ascii=False)
    if indent + prefix + len(text) <= WIDTH or not isinstance(node, (dict, list)) or not node:
        return text
    pad = " " * (indent + 2)
    if isinstance(node, dict):
        members = []
        for key, value in node.items():
            name = json.dumps(key, ensure_ascii=False) + ": "
            members.append(pad + name + layout(value, indent + 2, len(name)))
        return "{\n" + ",\n".join(members) + "\n" + " " * indent + "}"
    return "[\n" + ",\n".join(pad + layout(value, indent + 2) for value in node) + "\n" + " " * indent + "]"


def main() -> int:
    args = [arg for arg in sys.argv[1:] if arg != "--check"]
    path = Path(args[0]) if args else DOCUMENT
    text = path.read_text(encoding="utf-8")
    laid_out = layout(json.loads(text)) + "\n"
    if "--check" in sys.argv:
        if text != laid_out:
            print(f"{path} is not laid out by scripts/format-openapi.py (run it)", file=sys.stderr)
            return 1
        return 0
    path.write_text(laid_out, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
