"""``dynamo-lens explain CODE``: print the long explanation of a finding code."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from dynamo_lens.rules import Rule, all_rules, get_rule


def add_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "explain", help="explain a finding code", description="Print the long explanation of a finding code."
    )
    parser.add_argument("code", nargs="?", help="a code such as DL101; omit it to list every code")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.code is None:
        rules = list(all_rules().values())
        if args.format == "json":
            print(json.dumps([_rule_json(r) for r in rules], indent=2))
        else:
            for rule in rules:
                print(f"{rule.code}  {rule.name:<40} {rule.summary}")
        return 0
    found = get_rule(args.code)
    if found is None:
        print(f"dynamo-lens: unknown code {args.code!r}; `dynamo-lens explain` lists them", file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps(_rule_json(found), indent=2))
    else:
        print(found.explanation)
        print(f"\nDocs: {found.docs_url}")
    return 0


def _rule_json(rule: Rule) -> dict[str, Any]:
    return {
        "code": rule.code,
        "name": rule.name,
        "summary": rule.summary,
        "default_severity": rule.default_severity.value,
        "source": rule.source,
        "docs_url": rule.docs_url,
        "fix_title": rule.fix_title,
        "explanation": rule.explanation,
    }
