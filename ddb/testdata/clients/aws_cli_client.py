"""The AWS CLI adapter of ddb/clients_test.go (TestClients/aws-cli).

Runs `aws` commands inside one Python process, through the CLI's own entry
point (awscli.clidriver, what the aws script calls), so that a case does
not pay the CLI's start-up once per request. Reads one request a line on
stdin, {"args": [...], "env": {...}} (the arguments after `aws`, and the
AWS_* variables to set), and writes one line: {"rc", "stdout", "stderr"}
as the command would have exited and printed.
"""

import contextlib
import io
import json
import os
import sys

import awscli
from awscli.clidriver import create_clidriver


DRIVERS = {}


def run(req):
    # AWS_DATA_PATH is the CLI's own (set by importing awscli).
    for k in [k for k in os.environ if k.startswith("AWS_") and k != "AWS_DATA_PATH"]:
        del os.environ[k]
    os.environ.update(req["env"])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            # One driver per environment: a driver's session keeps the
            # credentials it first read.
            key = json.dumps(req["env"], sort_keys=True)
            if key not in DRIVERS:
                DRIVERS[key] = create_clidriver()
            rc = DRIVERS[key].main(req["args"])
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else 1
    return {"rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue()}


def main():
    print(json.dumps({"ready": "aws-cli " + awscli.__version__ + " (awscli.clidriver, in process)"}), flush=True)
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(run(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
