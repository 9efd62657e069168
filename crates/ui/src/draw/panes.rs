//! The right-hand panes: the selected snapshot's changed files over the selected file's diff,
//! or a blame in their place.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

use snap_tree::Change;
use snap_tree::display::{path_shown, text_shown};

use super::rows::scrolled;
use super::{Theme, plural};
use crate::app::{App, Focus, Mode};
use crate::detail::DiffLineKind;

pub(super) fn draw_detail(frame: &mut Frame<'_>, app: &App, area: Rect) {
    if let Mode::Blame(view) = &app.mode {
        let height = usize::from(area.height.saturating_sub(2));
        let lines: Vec<Line<'_>> = (view.lines.iter().skip(view.scroll).take(height))
            .map(|l| Line::raw(l.as_str()))
            .collect();
        let block = Block::bordered()
            .title(format!(" {} (Esc closes) ", view.title))
            .border_style(app.theme.focused());
        frame.render_widget(Paragraph::new(lines).block(block), area);
        return;
    }
    let wanted = u16::try_from(app.detail.files.len()).unwrap_or(u16::MAX);
    let files_height = wanted.saturating_add(2).clamp(3, area.height * 2 / 5);
    let [files, diff] =
        Layout::vertical([Constraint::Length(files_height), Constraint::Fill(1)]).areas(area);
    draw_files(frame, app, files);
    draw_diff(frame, app, diff);
}

fn draw_files(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let height = usize::from(area.height.saturating_sub(2)).max(1);
    let detail = &app.detail;
    let offset = scrolled(0, detail.file, height);
    let mut lines: Vec<Line<'_>> = (detail.files.iter().enumerate())
        .skip(offset)
        .take(height)
        .map(|(at, f)| {
            let (letter, style) = match &f.from {
                Some(_) => ('R', app.theme.hunk()),
                None => change_style(f.change, app.theme),
            };
            let path = match &f.from {
                Some(from) => format!("{} -> {}", path_shown(from), path_shown(&f.path)),
                None => path_shown(&f.path),
            };
            let focused = at == detail.file && app.focus == Focus::Files;
            let line = Line::from(vec![
                Span::raw(if focused { "›" } else { " " }),
                Span::styled(format!("{letter} "), style),
                Span::raw(path),
            ]);
            match focused {
                true => line.patch_style(app.theme.selected()),
                false => line,
            }
        })
        .collect();
    if let Some(error) = &detail.error {
        lines = vec![Line::styled(format!("error: {error}"), app.theme.removed())];
    } else if detail.first_kept {
        lines = vec![Line::raw(
            "its parent was pruned: nothing to compare it with (snap ls lists its files)",
        )];
    } else if detail.files.is_empty() && detail.of.is_some() {
        lines = vec![Line::raw("no file changed")];
    }
    let title = match app.selected_snapshot() {
        Some(s) if detail.first_kept => format!(" #{}: the first snapshot kept ", s.record.seq),
        Some(s) => format!(
            " #{} changed {} ",
            s.record.seq,
            plural(detail.files.len(), "file")
        ),
        None => " no snapshots yet: snap save makes one ".to_string(),
    };
    let mut block = Block::bordered().title(title);
    if app.focus == Focus::Files {
        block = block.border_style(app.theme.focused());
    }
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

fn draw_diff(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let height = usize::from(area.height.saturating_sub(2));
    let theme = app.theme;
    let lines: Vec<Line<'_>> = (app.detail.diff.iter().skip(app.detail.scroll).take(height))
        .map(|l| Line::styled(l.text.as_str(), diff_style(l.kind, theme)))
        .collect();
    let title = match app.selected_file() {
        Some(f) => format!(" {} {} (d cycles) ", path_shown(&f.path), app.base.label()),
        None => " diff ".to_string(),
    };
    let block = Block::bordered().title(text_shown(&title));
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

fn change_style(change: Change, theme: Theme) -> (char, Style) {
    match change {
        Change::Added => ('A', theme.added()),
        Change::Modified => ('M', theme.hunk()),
        Change::Deleted => ('D', theme.removed()),
    }
}

fn diff_style(kind: DiffLineKind, theme: Theme) -> Style {
    match kind {
        DiffLineKind::Note => theme.note(),
        DiffLineKind::Hunk => theme.hunk(),
        DiffLineKind::Added => theme.added(),
        DiffLineKind::Removed => theme.removed(),
        DiffLineKind::Context => Style::new(),
    }
}
