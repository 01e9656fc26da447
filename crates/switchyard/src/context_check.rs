//! Refusing, before sending, a request that cannot fit the model's context window.
//!
//! The estimate leans low on purpose: a request is refused only when even a generous
//! count of characters per token does not fit, because a wrong refusal stops a run that
//! would have worked while a miss costs one call that the provider then refuses (and
//! that is typed `ContextLengthExceeded` too). The estimator:
//!
//! - the canonical request as JSON (messages, tool declarations, settings), its UTF-8
//!   bytes divided by 4 (English prose runs near 4 bytes a token; code, JSON and most
//!   other languages run at fewer bytes a token, so for them the estimate is low);
//! - an image's bytes or URL are not counted as text: each image counts
//!   [`IMAGE_TOKENS`], the smallest cost the providers charge (OpenAI low detail);
//! - plus `max_tokens` when the request sets it.

use crate::error::{Error, Result};
use switchyard_wire::{Image, Part, Request};

/// UTF-8 bytes counted as one token.
pub(crate) const BYTES_PER_TOKEN: u64 = 4;

/// Tokens counted for one image.
pub(crate) const IMAGE_TOKENS: u64 = 85;

/// A low estimate of the request's prompt tokens (see the module docs).
pub(crate) fn estimate_prompt_tokens(request: &Request) -> u64 {
    let json_bytes = serde_json::to_vec(request)
        .map(|b| b.len() as u64)
        .unwrap_or(0);
    let mut image_bytes = 0u64;
    let mut images = 0u64;
    for part in request.messages.iter().flat_map(|m| m.content.iter()) {
        if let Part::Image(image) = part {
            images += 1;
            image_bytes += match image {
                Image::Base64 { data, .. } => data.len() as u64,
                Image::Url { url } => url.len() as u64,
            };
        }
    }
    json_bytes.saturating_sub(image_bytes) / BYTES_PER_TOKEN + images * IMAGE_TOKENS
}

/// `ContextLengthExceeded` when the estimated prompt plus `max_tokens` exceeds `window`.
pub(crate) fn check(backend: &str, request: &Request, window: u64) -> Result<()> {
    let prompt = estimate_prompt_tokens(request);
    let max = request.max_tokens.unwrap_or(0);
    if prompt.saturating_add(max) <= window {
        return Ok(());
    }
    let message = if request.max_tokens.is_some() {
        format!(
            "not sent: the prompt (at least {prompt} tokens, estimated) plus max_tokens {max} exceeds {backend}'s context window of {window} tokens; shorten the prompt or lower max_tokens (or turn the check off with `context_check: false`)"
        )
    } else {
        format!(
            "not sent: the prompt (at least {prompt} tokens, estimated) exceeds {backend}'s context window of {window} tokens; shorten the prompt (or turn the check off with `context_check: false`)"
        )
    };
    Err(Error::ContextLengthExceeded {
        prompt_tokens: Some(prompt),
        max_tokens: request.max_tokens,
        limit: Some(window),
        message,
        details: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_count_a_fixed_cost_not_their_bytes() {
        let mut request = Request::user("look");
        let base = estimate_prompt_tokens(&request);
        request.messages[0].content.push(Part::Image(Image::Base64 {
            media_type: "image/png".into(),
            data: "A".repeat(1_000_000),
        }));
        let with_image = estimate_prompt_tokens(&request);
        assert!(with_image >= base + IMAGE_TOKENS, "{with_image}");
        assert!(with_image < base + IMAGE_TOKENS + 50, "{with_image}");
    }

    #[test]
    fn refuses_only_what_cannot_fit() {
        let request = Request::user("x".repeat(4000));
        let prompt = estimate_prompt_tokens(&request);
        assert!((1000..1020).contains(&prompt), "{prompt}");
        assert!(check("b", &request, 2000).is_ok());
        let mut asking = request.clone();
        asking.max_tokens = Some(1500);
        let prompt = estimate_prompt_tokens(&asking);
        match check("b", &asking, 2000) {
            Err(Error::ContextLengthExceeded {
                prompt_tokens,
                max_tokens,
                limit,
                message,
                ..
            }) => {
                assert_eq!(prompt_tokens, Some(prompt));
                assert_eq!(max_tokens, Some(1500));
                assert_eq!(limit, Some(2000));
                assert!(message.contains("context_check: false"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}
