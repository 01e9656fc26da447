//! The `cli-agent` behaviour: a coding agent played deterministically against the tools a
//! coding CLI offers (Claude Code's `Write` and `Bash`, Codex's `apply_patch` and
//! `exec_command`), so a real CLI session can be driven to write a file, run a command
//! and answer.
//!
//! The file is the first word of the turn's opening user message that is a path (starts
//! with `/`, `./` or `~/`; the message's last text is read first, since the CLIs put their
//! reminders before the prompt), else [`DEFAULT_FILE`]. Its content is [`FILE_CONTENT`].
//! Rounds are counted as the `agent` behaviour counts them ([`crate::agent::round`]):
//!
//! | round | step |
//! |---|---|
//! | 0 | write the file: a tool taking `file_path`/`path` and `content` (`Write`), else `apply_patch` (an `*** Add File:` patch, free-form or as a function's `input`), else the shell tool (`printf … > file`) |
//! | 1 | run `cat <file>` with the shell tool: one taking `command` (`Bash`; a list for Codex's older `shell`) or `cmd` (`exec_command`) |
//! | 2 and later | answer with text quoting the last tool result: [`ANSWER_PREFIX`] then the result |
//!
//! Arguments are given in the order the tool's schema lists them. A CLI that offers no
//! fitting tool gets a text saying which tool was missing, so its session ends visibly.

use crate::agent::{self, Step};
use serde_json::{json, Map, Value};
use switchyard_wire::{Part, Request, Role, Tool, ToolCall, ToolKind};

/// What the file is named when the prompt names no path.
pub const DEFAULT_FILE: &str = "cli-agent.txt";
/// The content written to the file (one line).
pub const FILE_CONTENT: &str = "written by the switchyard mock cli-agent\n";
/// The final answer's opening words, followed by the command's output.
pub const ANSWER_PREFIX: &str = "The command printed: ";

/// This round's step; `digest` makes the call id.
pub fn step(request: &Request, digest: u64) -> Step {
    let id = format!("call_cli_{:012x}", digest & 0xffff_ffff_ffff);
    let path = file_path(request);
    match agent::round(request) {
        0 => match write_call(&request.tools, &path, id) {
            Some(call) => Step::Call(vec![call]),
            None => Step::Answer(
                "No tool to write a file with was offered (a `Write`, `apply_patch` or shell \
                 tool)."
                    .into(),
            ),
        },
        1 => match shell_call(&request.tools, &format!("cat {}", quoted(&path)), id) {
            Some(call) => Step::Call(vec![call]),
            None => Step::Answer("No shell tool was offered (`Bash`, `exec_command`).".into()),
        },
        _ => Step::Answer(format!("{ANSWER_PREFIX}{}", last_result(request))),
    }
}

/// The thinking text for this round's step.
pub fn thinking(step: &Step) -> String {
    match step {
        Step::Call(calls) => format!(
            "I will use {} for the next step.",
            calls.first().map_or("a tool", |c| c.name.as_str())
        ),
        Step::Answer(_) => "The command ran; I will report what it printed.".into(),
    }
}

/// The file the prompt names, or [`DEFAULT_FILE`].
pub fn file_path(request: &Request) -> String {
    let opening = agent::current_turn_start(request)
        .checked_sub(1)
        .and_then(|i| request.messages.get(i))
        .filter(|m| m.role == Role::User);
    opening
        .into_iter()
        .flat_map(|m| m.content.iter().rev())
        .filter_map(|p| match p {
            Part::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .flat_map(str::split_whitespace)
        .map(|w| {
            w.trim_start_matches(|c: char| "`'\"(".contains(c))
                .trim_end_matches(|c: char| "`'\".,;:)".contains(c))
        })
        .find(|w| w.len() > 2 && (w.starts_with('/') || w.starts_with("./") || w.starts_with("~/")))
        .unwrap_or(DEFAULT_FILE)
        .to_string()
}

/// The properties a function tool's schema declares, in their order.
fn properties(tool: &Tool) -> Option<&Map<String, Value>> {
    if tool.kind != ToolKind::Function {
        return None;
    }
    tool.parameters.get("properties")?.as_object()
}

/// A call writing [`FILE_CONTENT`] to `path` with the best tool offered.
fn write_call(tools: &[Tool], path: &str, id: String) -> Option<ToolCall> {
    let writer = tools.iter().find_map(|t| {
        let props = properties(t)?;
        let key = ["file_path", "path"]
            .into_iter()
            .find(|k| props.contains_key(*k))?;
        props.contains_key("content").then_some((t, key))
    });
    if let Some((tool, key)) = writer {
        let mut args = Map::new();
        args.insert(key.into(), path.into());
        args.insert("content".into(), FILE_CONTENT.into());
        return Some(call(tool, Value::Object(args).to_string(), id));
    }
    if let Some(tool) = tools.iter().find(|t| t.name == "apply_patch") {
        let lines: String = FILE_CONTENT.lines().map(|l| format!("+{l}\n")).collect();
        let patch = format!("*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n");
        let arguments = match tool.kind {
            ToolKind::Custom => patch,
            ToolKind::Function => json!({ "input": patch }).to_string(),
        };
        return Some(call(tool, arguments, id));
    }
    let command = format!(
        "printf '%s\\n' {} > {}",
        quoted(FILE_CONTENT.trim_end()),
        quoted(path)
    );
    shell_call(tools, &command, id)
}

/// A call running `command` with the shell tool offered.
fn shell_call(tools: &[Tool], command: &str, id: String) -> Option<ToolCall> {
    tools.iter().find_map(|t| {
        let props = properties(t)?;
        // Claude Code's `Bash` and Codex's older `shell` take `command` (a string, or
        // an argv list); Codex's `exec_command` takes `cmd`.
        let args = if let Some(p) = props.get("command") {
            if p["type"] == "array" {
                json!({ "command": ["bash", "-lc", command] })
            } else {
                json!({ "command": command })
            }
        } else if props.contains_key("cmd") {
            json!({ "cmd": command })
        } else {
            return None;
        };
        Some(call(t, args.to_string(), id.clone()))
    })
}

fn call(tool: &Tool, arguments: String, id: String) -> ToolCall {
    ToolCall {
        id,
        name: tool.name.clone(),
        arguments,
        kind: tool.kind,
        namespace: tool.namespace.clone(),
        state: None,
    }
}

/// `s` quoted for a POSIX shell.
fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The text of the last tool result of the request.
fn last_result(request: &Request) -> String {
    request
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|p| match p {
            Part::ToolResult(r) => Some(r.text()),
            _ => None,
        })
        .next_back()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_wire::{Message, ToolResult};

    fn function(name: &str, parameters: Value) -> Tool {
        Tool {
            name: name.into(),
            description: None,
            parameters,
            kind: ToolKind::Function,
            strict: None,
            namespace: None,
        }
    }

    fn claude_tools() -> Vec<Tool> {
        vec![
            function(
                "Bash",
                json!({"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"number"}},"required":["command"]}),
            ),
            function(
                "Write",
                json!({"type":"object","properties":{"file_path":{"type":"string"},"content":{"type":"string"}},"required":["file_path","content"]}),
            ),
        ]
    }

    fn exec_command() -> Tool {
        function(
            "exec_command",
            json!({"type":"object","properties":{"cmd":{"type":"string"},"login":{"type":"boolean"}},"required":["cmd"]}),
        )
    }

    fn apply_patch(kind: ToolKind) -> Tool {
        Tool {
            kind,
            ..function(
                "apply_patch",
                json!({"type":"grammar","syntax":"lark","definition":"start: x"}),
            )
        }
    }

    /// Claude Code's opening message: a reminder, then the prompt.
    fn opening(prompt: &str) -> Message {
        Message {
            role: Role::User,
            content: vec![
                Part::text("<system-reminder>see https://claude.com/claude-code</system-reminder>"),
                Part::text(prompt),
            ],
        }
    }

    /// `request` after the agent's `call` and its result `output`.
    fn answered(request: &mut Request, call: ToolCall, output: &str) {
        let result = ToolResult {
            call_id: call.id.clone(),
            name: Some(call.name.clone()),
            content: vec![Part::text(output)],
            is_error: false,
            kind: call.kind,
        };
        request.messages.push(Message {
            role: Role::Assistant,
            content: vec![Part::ToolCall(call)],
        });
        request.messages.push(Message {
            role: Role::Tool,
            content: vec![Part::ToolResult(result)],
        });
    }

    fn the_call(step: Step) -> ToolCall {
        match step {
            Step::Call(mut calls) if calls.len() == 1 => calls.remove(0),
            other => panic!("expected one call, got {other:?}"),
        }
    }

    #[test]
    fn claude_code_writes_runs_cat_and_answers() {
        let mut req = Request {
            tools: claude_tools(),
            messages: vec![opening("Write /home/dev/x/note.txt, then show it.")],
            ..Request::default()
        };
        assert_eq!(file_path(&req), "/home/dev/x/note.txt");

        let write = the_call(step(&req, 7));
        assert_eq!(write.name, "Write");
        let args: Value = serde_json::from_str(&write.arguments).unwrap();
        assert_eq!(
            args,
            json!({"file_path": "/home/dev/x/note.txt", "content": FILE_CONTENT})
        );
        assert_eq!(
            thinking(&Step::Call(vec![write.clone()])),
            "I will use Write for the next step."
        );
        answered(&mut req, write, "File created successfully");
        // Claude Code's reminder beside the result starts no new turn.
        req.messages
            .push(Message::text(Role::User, "<system-reminder>x"));

        let bash = the_call(step(&req, 8));
        assert_eq!(bash.name, "Bash");
        assert_eq!(
            bash.arguments,
            r#"{"command":"cat '/home/dev/x/note.txt'"}"#
        );
        answered(&mut req, bash, FILE_CONTENT);

        let Step::Answer(text) = step(&req, 9) else {
            panic!()
        };
        assert_eq!(text, format!("{ANSWER_PREFIX}{FILE_CONTENT}"));
    }

    #[test]
    fn codex_patches_with_apply_patch_whether_custom_or_a_function() {
        for kind in [ToolKind::Custom, ToolKind::Function] {
            let mut req = Request::user("Create ./out/a.txt please");
            req.tools = vec![exec_command(), apply_patch(kind)];
            let patch = the_call(step(&req, 1));
            assert_eq!((patch.name.as_str(), patch.kind), ("apply_patch", kind));
            let expected = format!(
                "*** Begin Patch\n*** Add File: ./out/a.txt\n+{}\n*** End Patch\n",
                FILE_CONTENT.trim_end()
            );
            match kind {
                ToolKind::Custom => assert_eq!(patch.arguments, expected),
                ToolKind::Function => {
                    let args: Value = serde_json::from_str(&patch.arguments).unwrap();
                    assert_eq!(args, json!({ "input": expected }));
                }
            }
            answered(
                &mut req,
                patch,
                "Success. Updated the following files:\nA ./out/a.txt",
            );
            let cat = the_call(step(&req, 2));
            assert_eq!(cat.name, "exec_command");
            assert_eq!(cat.arguments, r#"{"cmd":"cat './out/a.txt'"}"#);
        }
    }

    #[test]
    fn without_a_writing_tool_the_shell_writes_the_file() {
        let mut req = Request::user("Say hi");
        req.tools = vec![exec_command()];
        assert_eq!(file_path(&req), DEFAULT_FILE);
        let write = the_call(step(&req, 3));
        assert_eq!(
            write.arguments,
            json!({"cmd": "printf '%s\\n' 'written by the switchyard mock cli-agent' > 'cli-agent.txt'"})
                .to_string()
        );
        // The command, run by a shell, writes FILE_CONTENT exactly.
        let dir = std::env::temp_dir().join(format!("cli-agent-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let args: Value = serde_json::from_str(&write.arguments).unwrap();
        let ran = std::process::Command::new("sh")
            .arg("-c")
            .arg(args["cmd"].as_str().unwrap())
            .current_dir(&dir)
            .status();
        if let Ok(status) = ran {
            assert!(status.success());
            let written = std::fs::read_to_string(dir.join(DEFAULT_FILE)).unwrap();
            assert_eq!(written, FILE_CONTENT);
        }
        let _ = std::fs::remove_dir_all(&dir);

        // Codex's older `shell` takes an argv list.
        req.tools = vec![function(
            "shell",
            json!({"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}}}),
        )];
        answered(&mut req, write, "");
        let cat = the_call(step(&req, 4));
        assert_eq!(
            cat.arguments,
            json!({"command": ["bash", "-lc", "cat 'cli-agent.txt'"]}).to_string()
        );
    }

    #[test]
    fn missing_tools_are_said() {
        let req = Request::user("x");
        let Step::Answer(text) = step(&req, 1) else {
            panic!()
        };
        assert!(text.contains("No tool to write a file"), "{text}");
        let mut req = Request::user("x");
        req.tools = vec![claude_tools().remove(1)];
        let write = the_call(step(&req, 1));
        answered(&mut req, write, "ok");
        let Step::Answer(text) = step(&req, 2) else {
            panic!()
        };
        assert!(text.contains("No shell tool"), "{text}");
    }
}
