//! How text the store holds is shown to a person, the same in every front end (`snap log`,
//! `snap ui`): paths and agent-written text with control characters escaped, times in UTC.

/// A path for people and JSON: UTF-8 where it is, with invalid bytes replaced.
pub fn path_str(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}

/// A path for a person's terminal: as [`path_str`], with control characters (a newline, an
/// escape sequence) written as `\n`, `\t`, `\x1b`, so a hostile name cannot forge lines or
/// drive the terminal. JSON escapes them itself and uses [`path_str`].
pub fn path_shown(path: &[u8]) -> String {
    text_shown(&String::from_utf8_lossy(path))
}

/// Text the agent controls (a message, session, meta key or value) for a person's terminal:
/// control characters escaped as [`path_shown`] escapes them, so `\e]0;...\a` or `\e[2J` in a
/// hook payload is shown, never obeyed. JSON output carries the text as it is.
pub fn text_shown(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    text.chars()
        .map(|c| match c {
            '\n' => "\\n".to_string(),
            '\t' => "\\t".to_string(),
            '\r' => "\\r".to_string(),
            c if c.is_control() => format!("\\x{:02x}", u32::from(c)),
            c => c.to_string(),
        })
        .collect()
}

/// How many characters of a session a line shows (`log`, `blame`, the UI); `log --session`
/// takes them back as a prefix.
pub const SESSION_SHORT: usize = 8;

/// A session's first [`SESSION_SHORT`] characters, for a line that has no room for it whole.
pub fn session_short(session: &str) -> String {
    session.chars().take(SESSION_SHORT).collect()
}

/// `YYYY-MM-DD HH:MM:SS` UTC.
pub fn time_str(time_ns: i64) -> String {
    let secs = time_ns.div_euclid(1_000_000_000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::{text_shown, time_str};

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert_eq!(text_shown("a\x1b[2Jb\n"), "a\\x1b[2Jb\\n");
        assert_eq!(text_shown("plain"), "plain");
    }

    #[test]
    fn times_are_utc_dates() {
        assert_eq!(time_str(0), "1970-01-01 00:00:00");
        assert_eq!(time_str(951_782_400_000_000_000), "2000-02-29 00:00:00");
    }
}
