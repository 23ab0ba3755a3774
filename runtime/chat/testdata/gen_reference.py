#!/usr/bin/env python3
"""Fill in the reference outputs of reference.txtar with Jinja2 itself.

Each case in reference.txtar is NAME.jinja (the template) and optionally
NAME.json (its variables). This script renders every case the way Hugging Face
renders chat templates (transformers' ImmutableSandboxedEnvironment with
trim_blocks, lstrip_blocks and loopcontrols; tojson as json.dumps with
ensure_ascii=False; raise_exception; strftime_now at 2026-11-21 10:30) and
writes NAME.out (the output, as a JSON string) or NAME.err (the exception's
type and message), replacing the old ones.

    python3 runtime/chat/testdata/gen_reference.py   # Jinja2 3.1.x

The Go test (reference_test.go) then holds runtime/chat to these outputs.
"""
import datetime
import json
import os
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "reference.txtar")


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def strftime_now(fmt):
    return datetime.datetime(2026, 11, 21, 10, 30).strftime(fmt)


def env():
    e = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    e.filters["tojson"] = tojson
    e.globals["raise_exception"] = raise_exception
    e.globals["strftime_now"] = strftime_now
    return e


def parse_txtar(text):
    comment, files, name, buf = [], [], None, []
    for line in text.splitlines(keepends=True):
        s = line.rstrip("\n")
        if s.startswith("-- ") and s.endswith(" --") and len(s) > 6:
            if name is None:
                comment = buf
            else:
                files.append((name, "".join(buf)))
            name, buf = s[3:-3].strip(), []
        else:
            buf.append(line)
    if name is None:
        comment = buf
    else:
        files.append((name, "".join(buf)))
    return "".join(comment), files


def main():
    with open(PATH, encoding="utf-8") as f:
        comment, files = parse_txtar(f.read())
    inputs = [(n, d) for n, d in files if n.endswith(".jinja") or n.endswith(".json")]
    data = dict(inputs)
    e = env()
    final = [comment]
    for name, body in inputs:
        final.append(f"-- {name} --\n{body}")
        case = name.rsplit(".", 1)[0]
        if name.endswith(".jinja") and case + ".json" not in data:
            final.append(render(e, case, body, None))
        if name.endswith(".json"):
            final.append(render(e, case, data[case + ".jinja"], body))
    with open(PATH, "w", encoding="utf-8") as f:
        f.write("".join(final))


def render(e, case, template, variables):
    vars_ = json.loads(variables) if variables else {}
    try:
        text = e.from_string(template).render(**vars_)
        return f"-- {case}.out --\n{json.dumps(text, ensure_ascii=False)}\n"
    except Exception as exc:  # noqa: BLE001 - every failure is a reference result
        msg = str(exc).replace("\n", " ")
        return f"-- {case}.err --\n{type(exc).__name__}: {msg}\n"


if __name__ == "__main__":
    sys.exit(main())
