//! A call that ended before its reply did is billed on what was generated: what a stream
//! had shown ([`SeenSoFar`]), the prompt as reported or estimated from the bytes sent.
//! The meter bills a client that left with it; a stream stopped at its budget
//! reservation is checked against it on every chunk (`account/budget_stop.rs`).

use switchyard::Usage;

/// What a stream had shown when the client left, to bill what was generated.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SeenSoFar {
    /// The latest usage the stream reported (Anthropic's `message_start` has the prompt).
    pub usage: Option<Usage>,
    /// Bytes of output (text, thinking, tool-call arguments) relayed so far.
    pub output_bytes: usize,
}

/// The usage of a call that ended before its reply did, billing what was generated: the
/// prompt as the provider reported it, else estimated from the bytes sent (÷ 4, the
/// estimate the context check uses); the output as reported, or the bytes of output
/// relayed ÷ 4 when that is more (a stream reports its output count only at its end). Gives the
/// usage and a sentence saying how it was made (relayed `until`: before the client left…),
/// for the record.
pub(crate) fn bill_unfinished(
    reported: Option<Usage>,
    sent_bytes: usize,
    output_bytes: usize,
    until: &str,
) -> (Usage, String) {
    let usage = unfinished_usage(reported, sent_bytes, output_bytes);
    let reported = reported.unwrap_or_default();
    let mut how = Vec::new();
    if reported.input == 0 {
        how.push(format!(
            "prompt estimated from the {sent_bytes} bytes sent (÷ 4)"
        ));
    } else {
        how.push("prompt as the provider reported it".to_string());
    }
    if usage.output > reported.output {
        how.push(format!(
            "output estimated from the {output_bytes} bytes of output relayed {until} (÷ 4)"
        ));
    } else {
        how.push("output as the provider reported it".to_string());
    }
    (usage, how.join("; "))
}

/// The usage of [`bill_unfinished`] without its sentence (checked on every chunk of a
/// budgeted stream, `budget_stop.rs`).
pub(crate) fn unfinished_usage(
    reported: Option<Usage>,
    sent_bytes: usize,
    output_bytes: usize,
) -> Usage {
    let mut usage = reported.unwrap_or_default();
    if usage.input == 0 {
        usage.input = (sent_bytes as u64).div_ceil(4);
    }
    usage.output = usage.output.max((output_bytes as u64).div_ceil(4));
    usage
}
