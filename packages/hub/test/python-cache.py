"""Drives Python's huggingface_hub against Ludic's fake Hub (and Ludic's cache) for the cache conformance fixture.

Run by record-python-conformance.ts, never by the test suite:

    python python-cache.py download '<json plan>'   # HF_ENDPOINT, HF_HUB_CACHE set: hf_hub_download each file
    python python-cache.py read '<json plan>'       # HF_HUB_OFFLINE=1, HF_HUB_CACHE set: read each file back

A plan is [{"repo": "owner/name", "revision": "main", "files": [...], "absent": [...]}]. Prints one JSON object.
"""

import hashlib
import json
import os
import sys

import huggingface_hub
from huggingface_hub import hf_hub_download, scan_cache_dir, snapshot_download
from huggingface_hub.errors import EntryNotFoundError


def sha256(path):
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


def download(plan):
    for repo in plan:
        for name in repo["files"]:
            hf_hub_download(repo["repo"], name, revision=repo["revision"])
        for name in repo["absent"]:
            try:
                hf_hub_download(repo["repo"], name, revision=repo["revision"])
                raise SystemExit(f"{name} should be absent")
            except EntryNotFoundError:
                pass
    return {"huggingface_hub": huggingface_hub.__version__}


def read(plan):
    cache = os.environ["HF_HUB_CACHE"]
    results = []
    for repo in plan:
        files = {}
        for name in repo["files"]:
            path = hf_hub_download(repo["repo"], name, revision=repo["revision"])
            files[name] = {"path": os.path.relpath(path, cache), "sha256": sha256(path)}
        absent = {}
        for name in repo["absent"]:
            try:
                hf_hub_download(repo["repo"], name, revision=repo["revision"])
                absent[name] = "found"
            except EntryNotFoundError:
                absent[name] = "EntryNotFoundError"
            except Exception as error:  # noqa: BLE001 - recorded as it is
                absent[name] = type(error).__name__
        try:
            snapshot = os.path.relpath(snapshot_download(repo["repo"], revision=repo["revision"], allow_patterns=repo["files"]), cache)
        except Exception as error:  # noqa: BLE001 - recorded as it is
            snapshot = type(error).__name__
        results.append({"repo": repo["repo"], "revision": repo["revision"], "files": files, "absent": absent, "snapshot_download": snapshot})
    scan = scan_cache_dir(cache)
    repos = [
        {
            "repo_id": info.repo_id,
            "repo_type": info.repo_type,
            "revisions": sorted(
                [
                    {"commit_hash": revision.commit_hash, "refs": sorted(revision.refs), "files": sorted(file.file_name for file in revision.files)}
                    for revision in info.revisions
                ],
                key=lambda revision: revision["commit_hash"],
            ),
        }
        for info in sorted(scan.repos, key=lambda info: info.repo_id)
    ]
    return {"huggingface_hub": huggingface_hub.__version__, "results": results, "scan_cache_dir": repos, "warnings": [str(warning) for warning in scan.warnings]}


if __name__ == "__main__":
    command, plan = sys.argv[1], json.loads(sys.argv[2])
    print(json.dumps(download(plan) if command == "download" else read(plan), indent=1, sort_keys=True))
