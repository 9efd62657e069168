//! The caps on what an agent's payload may put into the store and the hook's log
//! (docs/AGENTS.md): a payload is read up to 32 MiB, but the fields a hook records (the
//! session, the event's name, the tool and the agent's ids) are kept to [`FIELD_CAP`] bytes
//! each, and a line of `hook.log` to [`LINE_CAP`]. What is cut ends in [`MARKER`], at a
//! character boundary, within the cap; the event is still saved.

/// The most bytes a recorded field keeps: a session id, an event or tool name, an id.
pub(crate) const FIELD_CAP: usize = 256;

/// The most bytes of one line of the hook's log (well within the 4 KiB `snap status` reads
/// back from its end).
pub(crate) const LINE_CAP: usize = 2 << 10;

/// What ends a value that was cut.
pub(crate) const MARKER: &str = "…[truncated]";

/// `text` itself when it fits in `cap` bytes; else its longest prefix that ends on a
/// character boundary and leaves room for [`MARKER`], then the marker.
pub(crate) fn capped(mut text: String, cap: usize) -> String {
    if text.len() <= cap {
        return text;
    }
    let mut end = cap.saturating_sub(MARKER.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(MARKER);
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hook::payload::HookEvent;

    #[test]
    fn a_long_value_is_cut_at_a_character_boundary_within_the_cap() {
        assert_eq!(capped("short".into(), FIELD_CAP), "short");
        let exact = "x".repeat(FIELD_CAP);
        assert_eq!(capped(exact.clone(), FIELD_CAP), exact);
        for filler in ["a", "é", "€", "𝄞"] {
            let long = filler.repeat(10_000);
            let cut = capped(long.clone(), FIELD_CAP);
            assert!(cut.len() <= FIELD_CAP, "{filler}: {}", cut.len());
            assert!(cut.len() > FIELD_CAP - MARKER.len() - 4, "{filler}");
            let kept = cut.strip_suffix(MARKER).unwrap_or_default();
            assert!(!kept.is_empty() && long.starts_with(kept), "{filler}");
        }
    }

    #[test]
    fn every_recorded_field_of_an_event_is_capped() {
        let huge = "s".repeat(10 << 20);
        let event = (HookEvent {
            name: huge.clone(),
            session: Some(huge.clone()),
            tool: Some(huge.clone()),
            ids: vec![("tool_use_id", huge.clone()), ("prompt_id", "p1".into())],
            ..HookEvent::default()
        })
        .bounded();
        let fields = [&event.name, event.session.as_ref().unwrap_or(&huge)]
            .into_iter()
            .chain(event.tool.as_ref())
            .chain(event.ids.iter().map(|(_, v)| v));
        for value in fields {
            assert!((value.len() <= FIELD_CAP && value.ends_with(MARKER)) || value == "p1");
        }
    }
}
