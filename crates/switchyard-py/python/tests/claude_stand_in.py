"""The test suite's stand-in `claude`: a shell script printing Claude Code's output (the
JSON result, or with `--output-format stream-json` the stream-json lines ending in it),
recording how it was run. The Rust tests' stand-ins do the same."""

import json
import stat

SESSION = "4b1f6a8e-5d2c-4c1e-9a0b-3f2e1d0c9b8a"

# One `claude -p --output-format json` result, as Claude Code prints it.
CLAUDE_OK = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "api_error_status": None,
    "duration_ms": 2843,
    "duration_api_ms": 2611,
    "num_turns": 1,
    "result": "Paris is the capital of France.",
    "stop_reason": "end_turn",
    "session_id": SESSION,
    "total_cost_usd": 0.0421,
    "usage": {
        "input_tokens": 9,
        "cache_creation_input_tokens": 5120,
        "cache_read_input_tokens": 14000,
        "output_tokens": 11,
    },
    "permission_denials": [],
}

# The same answer as `--output-format stream-json --verbose --include-partial-messages`
# prints it: the text in two deltas, the whole message repeated, then the result.
DELTAS = ["Paris is ", "the capital of France."]


def stream_lines():
    def event(e):
        return {"type": "stream_event", "event": e, "session_id": SESSION}

    lines = [{"type": "system", "subtype": "init", "session_id": SESSION, "tools": []}]
    lines.append(event({"type": "message_start", "message": {"id": "msg_01"}}))
    lines.append(
        event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
    )
    for text in DELTAS:
        lines.append(
            event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})
        )
    lines.append(
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "".join(DELTAS)}]}}
    )
    lines.append(event({"type": "message_stop"}))
    lines.append(CLAUDE_OK)
    return "".join(json.dumps(line) + "\n" for line in lines)


class StandIn:
    """`<tmp>/bin/claude`. `runs` counts its runs; `argv` and `stdin` are the last run's."""

    def __init__(self, tmp_path):
        self.dir = tmp_path / "claude-stand-in"
        (self.dir / "bin").mkdir(parents=True)
        (self.dir / "result.json").write_text(json.dumps(CLAUDE_OK))
        (self.dir / "stream.jsonl").write_text(stream_lines())
        self.program = self.dir / "bin" / "claude"
        d = self.dir
        self.program.write_text(
            "#!/bin/sh\n"
            f"echo run >> '{d}/runs'\n"
            f"for a in \"$@\"; do printf '%s\\n' \"$a\"; done > '{d}/argv'\n"
            f"cat > '{d}/stdin'\n"
            "case \" $* \" in\n"
            f"  *' stream-json '*) cat '{d}/stream.jsonl' ;;\n"
            f"  *) cat '{d}/result.json' ;;\n"
            "esac\n"
        )
        self.program.chmod(self.program.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)

    @property
    def runs(self):
        runs = self.dir / "runs"
        return len(runs.read_text().splitlines()) if runs.exists() else 0

    @property
    def argv(self):
        return (self.dir / "argv").read_text().splitlines()

    @property
    def stdin(self):
        return (self.dir / "stdin").read_text()
