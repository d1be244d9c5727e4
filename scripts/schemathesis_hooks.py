"""Loaded by scripts/api-contract through SCHEMATHESIS_HOOKS.

Works around a CPython 3.11 bug, not a finding about the API: hypothesis describes the lambdas
passed to `.filter()` by parsing their module's source with `ast.parse`, and on Python 3.11 that
raises "SystemError: AST constructor recursion depth mismatch" when it is called from a deep stack
(CPython issue gh-106905), which schemathesis reports as a runtime error of its coverage phase.
The description is only a repr, so a plain one stands in when parsing fails.

With PUSHFLEET_CONTRACT_APP_ID set (the live-key run of the credential routes), a well-formed
`{id}` of those routes becomes that app of the key's account, so generated bodies reach the
server's checks instead of a 404 for an unknown app.
"""
import os
import re

import hypothesis.internal.lambda_sources as lambda_sources
import schemathesis

_describe = lambda_sources._lambda_description


def _safe_description(f):
    try:
        return _describe(f)
    except SystemError:
        return "lambda"


lambda_sources._lambda_description = _safe_description

APP_ID = re.compile(r"^papp_[0-9a-f]{32}$")


@schemathesis.hook
def map_path_parameters(ctx, path_parameters):
    app = os.environ.get("PUSHFLEET_CONTRACT_APP_ID")
    operation = getattr(ctx, "operation", None)
    path = getattr(operation, "path", "") or ""
    # Only a well-formed generated id is replaced: a malformed one (a negative case) must stay 404.
    if app and path_parameters and "/credentials" in path and APP_ID.match(str(path_parameters.get("id", ""))):
        path_parameters["id"] = app
    return path_parameters
