"""The boto3 adapter of ddb/clients_test.go (TestClients/boto3).

Reads one request a line on stdin, {"op", "input", "credentials": {"id",
"secret"}} with the input in DynamoDB's wire JSON (B values in base64),
calls the operation with boto3's low-level DynamoDB client at
$QC_ENDPOINT, and writes one line: {"output": ...} or {"error": {"type",
"message", "fields"}} (fields: the error's modeled members, e.g. Item or
CancellationReasons), or {"unknownParameter": "..."} when this boto3's
model lacks a parameter of the input, or {"fail": "..."} when the call
could not be made.
Binary values go back in base64, timestamps as ISO 8601 text.
"""

import base64
import datetime
import json
import os
import sys

import boto3
import botocore
from botocore.config import Config
from botocore.exceptions import ClientError, ParamValidationError

CLIENTS = {}


def client(creds):
    key = (creds["id"], creds["secret"])
    if key not in CLIENTS:
        CLIENTS[key] = boto3.client(
            "dynamodb",
            endpoint_url=os.environ["QC_ENDPOINT"],
            region_name=os.environ.get("QC_REGION", "us-east-1"),
            aws_access_key_id=creds["id"],
            aws_secret_access_key=creds["secret"],
            config=Config(retries={"max_attempts": 1, "mode": "standard"}),
        )
    return CLIENTS[key]


def to_sdk(v):
    """Wire JSON to boto3's input: B and BS values become bytes."""
    if isinstance(v, dict):
        if len(v) == 1:
            (k, x), = v.items()
            if k == "B" and isinstance(x, str):
                return {"B": base64.b64decode(x)}
            if k == "BS" and isinstance(x, list) and all(isinstance(e, str) for e in x):
                return {"BS": [base64.b64decode(e) for e in x]}
        return {k: to_sdk(x) for k, x in v.items()}
    if isinstance(v, list):
        return [to_sdk(x) for x in v]
    return v


def to_wire(v):
    """boto3's output back to wire JSON."""
    if isinstance(v, dict):
        return {k: to_wire(x) for k, x in v.items()}
    if isinstance(v, list):
        return [to_wire(x) for x in v]
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode()
    if isinstance(v, (datetime.datetime, datetime.date)):
        return v.isoformat()
    return v


def call(req):
    c = client(req["credentials"])
    method = getattr(c, botocore.xform_name(req["op"]))
    try:
        out = method(**to_sdk(req["input"]))
    except ParamValidationError as e:
        if "Unknown parameter" in str(e):
            return {"unknownParameter": str(e)}
        raise
    except ClientError as e:
        resp = dict(e.response)
        err = resp.pop("Error", {})
        resp.pop("ResponseMetadata", None)
        return {"error": {"type": err.get("Code", ""), "message": err.get("Message", ""), "fields": to_wire(resp)}}
    out.pop("ResponseMetadata", None)
    return {"output": to_wire(out)}


def main():
    print(json.dumps({"ready": "boto3 " + boto3.__version__ + ", botocore " + botocore.__version__}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            res = call(json.loads(line))
        except Exception as e:  # the adapter's own failure, reported as such
            res = {"fail": "%s: %s" % (type(e).__name__, e)}
        print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
