"""What the counting scripts (`auth_counts.sh`, `rest_instructions.sh`) read back after a run:
the callgrind dump each `callgrind_control -d NAME` wrote, and the load tool's successes.

Used as a module: `PYTHONPATH=scripts/lib python3 - OUT <<'EOF' … from callgrind_dumps import …`.
"""
import glob
import json
import re


def dump(out, name):
    """(path, total instructions) of the dump triggered as NAME among OUT's callgrind.* files."""
    for path in glob.glob(f"{out}/callgrind.*"):
        text = open(path, errors="replace").read()
        if re.search(rf"^desc: Trigger: dump {name}$", text, re.M):
            return path, int(re.search(r"^summary: (\d+)", text, re.M).group(1))
    raise SystemExit(f"{out}: no callgrind dump triggered as {name!r}")


def successes(out, name):
    """The requests the load tool's run NAME answered (its report in OUT/NAME)."""
    with open(f"{out}/{name}/report.json") as report:
        return json.load(report)["per_server"][0]["successes"]
