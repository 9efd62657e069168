//! The timeline pane: one line per row, the visible ones only.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use snap_tree::display::{text_shown, time_str};
use snap_tree::{History, Item, Lines, Standing};

use super::{Theme, plural};
use crate::app::{App, Focus};
use crate::timeline::{Row, RowKind};

pub(super) fn draw_timeline(frame: &mut Frame<'_>, app: &mut App, area: Rect) {
    let height = usize::from(area.height.saturating_sub(2)).max(1);
    app.offset = scrolled(app.offset, app.selected, height);
    let rows = app.timeline.rows();
    let lines: Vec<Line<'_>> = (rows.iter().enumerate())
        .skip(app.offset)
        .take(height)
        .map(|(at, row)| {
            let mut line = row_line(
                &app.history,
                row,
                app.theme,
                app.marked_snapshot().map(|s| s.id),
            );
            // A gutter mark besides the reversed colours: a monochrome screen or a screen
            // capture shows the selection too.
            let gutter = if at == app.selected { "›" } else { " " };
            line.spans.insert(0, Span::raw(gutter));
            match at == app.selected {
                true => line.patch_style(app.theme.selected()),
                false => line,
            }
        })
        .collect();
    let title = format!(
        " history: {} snapshots{} ",
        // The snapshots this listing shows: abandoned ones only with all lines.
        (app.history.items().iter())
            .filter(|item| app.lines.holds(item.standing))
            .count(),
        if app.lines == Lines::All {
            ", all lines"
        } else {
            ""
        }
    );
    let mut block = Block::bordered().title(title);
    if app.focus == Focus::Timeline {
        block = block.border_style(app.theme.focused());
    }
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// The first row to show so that `selected` is on a screen of `height` rows, moving as
/// little as possible from `offset`.
pub(super) fn scrolled(offset: usize, selected: usize, height: usize) -> usize {
    if selected < offset {
        selected
    } else if selected >= offset + height {
        selected + 1 - height
    } else {
        offset
    }
}

fn row_line(
    history: &History,
    row: &Row,
    theme: Theme,
    marked: Option<snap_tree::ObjectId>,
) -> Line<'static> {
    let item = &history.items()[row.at];
    let indent = "  ".repeat(usize::from(row.depth));
    let fold = match (row.is_group(), row.folded) {
        (false, _) => "",
        (true, true) => "▸ ",
        (true, false) => "▾ ",
    };
    let mut spans = vec![Span::raw(format!("{indent}{fold}"))];
    match &row.kind {
        RowKind::Session { name, turns } => {
            let who = name
                .as_deref()
                .map_or("saves outside a session".to_string(), |n| {
                    format!("session {}", short(n, 8))
                });
            spans.push(Span::styled(who, theme.session()));
            spans.push(Span::raw(format!(
                "  {}, {}",
                plural(*turns, "turn"),
                plural(row.count, "snapshot")
            )));
        }
        RowKind::Turn { step, calls } => {
            let name = step.map_or("no turn".to_string(), |s| format!("turn {s}"));
            spans.push(Span::styled(name, theme.turn()));
            let time = &time_str(item.snapshot.record.time_ns)[5..16];
            spans.push(Span::raw(format!("  {time}  {}", plural(*calls, "call"))));
        }
        RowKind::Call => {
            let tool = item.meta("tool").unwrap_or("tool call");
            spans.push(Span::raw(format!(
                "{}  {}",
                text_shown(tool),
                plural(row.count, "snapshot")
            )));
        }
        RowKind::Snapshot => spans.extend(snapshot_spans(item, theme, marked)),
    }
    spans.extend(line_count(row, theme));
    Line::from(spans)
}

fn snapshot_spans(
    item: &Item,
    theme: Theme,
    marked: Option<snap_tree::ObjectId>,
) -> Vec<Span<'static>> {
    let r = &item.snapshot.record;
    let (tag, style) = match item.standing {
        Standing::Head => ("HEAD ", theme.head()),
        Standing::Redo => ("redo ", theme.dim()),
        Standing::Abandoned => ("gone ", theme.dim()),
        Standing::Line => ("", ratatui::style::Style::new()),
    };
    let mark = if marked == Some(item.snapshot.id) {
        "* "
    } else {
        ""
    };
    let what = match (r.message.is_empty(), item.meta("tool")) {
        (_, Some(tool)) if r.message.is_empty() => text_shown(tool),
        (true, _) => r.kind.as_str().to_string(),
        (false, Some(tool)) => format!("{} [{}]", text_shown(&r.message), text_shown(tool)),
        (false, None) => text_shown(&r.message),
    };
    let time = &time_str(r.time_ns)[11..19];
    vec![
        Span::styled(format!("{mark}{tag}#{} ", r.seq), style),
        Span::styled(format!("{time} "), theme.dim()),
        Span::styled(what, style),
    ]
}

fn line_count(row: &Row, theme: Theme) -> Vec<Span<'static>> {
    if row.lines.added == 0 && row.lines.removed == 0 {
        return Vec::new();
    }
    vec![
        Span::styled(format!("  +{}", row.lines.added), theme.added()),
        Span::styled(format!(" -{}", row.lines.removed), theme.removed()),
    ]
}

fn short(text: &str, n: usize) -> String {
    text_shown(&text.chars().take(n).collect::<String>())
}
