"""Loaded by scripts/api-contract through SCHEMATHESIS_HOOKS.

Works around a CPython 3.11 bug, not a finding about the API: hypothesis describes the lambdas
passed to `.filter()` by parsing their module's source with `ast.parse`, and on Python 3.11 that
raises "SystemError: AST constructor recursion depth mismatch" when it is called from a deep stack
(CPython issue gh-106905), which schemathesis reports as a runtime error of its coverage phase.
The description is only a repr, so a plain one stands in when parsing fails.
"""
import hypothesis.internal.lambda_sources as lambda_sources

_describe = lambda_sources._lambda_description


def _safe_description(f):
    try:
        return _describe(f)
    except SystemError:
        return "lambda"


lambda_sources._lambda_description = _safe_description
