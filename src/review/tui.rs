//! The interactive review: the session's files grouped by agent, errors first, with their
//! counts and reviewed marks, on the alternate screen (ratatui over crossterm).
//!
//! Keys: `j`/`k` or arrows move, `space` marks reviewed (again: unmarks), `n` jumps to the
//! next unreviewed file (errors first), `e`/Enter opens `$EDITOR` at the first problem, `d`
//! shows the diff against HEAD, `r` reloads, `q`/Esc quits. While idle the view looks every
//! second at the summary file the service rewrites after each change and reloads from the
//! service when it changed, so new edits (which clear marks) show up; a resize redraws. Colours follow `NO_COLOR` (set and not empty: none; the selection stays
//! reversed). The terminal is restored on every way out, a panic included, and handed to
//! the editor or git for their run.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use openfiles_wire::summary;

use anyhow::Context as _;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::crossterm::{cursor, execute};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{List, ListItem, ListState, Paragraph};
use ratatui::Terminal;

use super::model::{self, Model};
use super::{actions, fetch};
use crate::control::client::Client;
use crate::visible::escape;
use openfiles_wire::control::{Call, ReviewMark};

/// How often the view reloads while no key is pressed.
const RELOAD_EVERY: Duration = Duration::from_secs(1);

type Term = Terminal<CrosstermBackend<std::io::Stdout>>;

struct App {
    client: Option<Client>,
    socket: PathBuf,
    dir: PathBuf,
    model: Model,
    /// Display position of the selected file.
    selected: Option<usize>,
    message: String,
    color: bool,
    /// The summary file's mtime at the last reload (`None`: reload every time).
    seen: Option<std::time::SystemTime>,
}

/// Run the view until the user quits.
pub fn run(
    client: Client,
    socket: PathBuf,
    dir: PathBuf,
    model: Model,
    first_frame_only: bool,
) -> anyhow::Result<()> {
    let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let mut app = App {
        client: Some(client),
        socket,
        dir,
        selected: model
            .next_unreviewed(None)
            .or((!model.order.is_empty()).then_some(0)),
        model,
        message: String::new(),
        color,
        seen: None,
    };
    app.seen = app.summary_mtime();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
    let mut terminal = enter()?;
    let result = app.event_loop(&mut terminal, first_frame_only);
    restore();
    result
}

fn enter() -> anyhow::Result<Term> {
    enable_raw_mode().context("cannot put the terminal in raw mode")?;
    let mut out = std::io::stdout();
    execute!(out, EnterAlternateScreen, cursor::Hide).context("cannot set up the terminal")?;
    Terminal::new(CrosstermBackend::new(out)).context("cannot set up the terminal")
}

/// Give the terminal back as it was (idempotent).
fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(std::io::stdout(), LeaveAlternateScreen, cursor::Show);
}

impl App {
    fn event_loop(&mut self, terminal: &mut Term, first_frame_only: bool) -> anyhow::Result<()> {
        loop {
            terminal.draw(|f| self.draw(f))?;
            if first_frame_only {
                return Ok(());
            }
            if !event::poll(RELOAD_EVERY)? {
                let now = self.summary_mtime();
                if now.is_none() || now != self.seen {
                    self.reload();
                }
                continue;
            }
            match event::read()? {
                Event::Key(k) if k.kind == KeyEventKind::Press => {
                    let ctrl_c =
                        k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                    match k.code {
                        _ if ctrl_c => return Ok(()),
                        KeyCode::Char('q') | KeyCode::Esc => return Ok(()),
                        KeyCode::Down | KeyCode::Char('j') => self.step(1),
                        KeyCode::Up | KeyCode::Char('k') => self.step(-1),
                        KeyCode::Home | KeyCode::Char('g') => self.go(0),
                        KeyCode::End | KeyCode::Char('G') => {
                            self.go(self.model.order.len().saturating_sub(1))
                        }
                        KeyCode::Char(' ') | KeyCode::Char('m') => self.toggle(),
                        KeyCode::Char('n') | KeyCode::Tab => self.next(),
                        KeyCode::Char('r') => {
                            self.reload();
                            self.message = "reloaded".into();
                        }
                        KeyCode::Char('e') | KeyCode::Enter => self.handover(terminal, false)?,
                        KeyCode::Char('d') => self.handover(terminal, true)?,
                        _ => {}
                    }
                }
                // A resize (or anything else) just redraws.
                _ => {}
            }
        }
    }

    fn step(&mut self, by: isize) {
        let n = self.model.order.len();
        if n == 0 {
            return;
        }
        let cur = self.selected.unwrap_or(0) as isize;
        self.go((cur + by).clamp(0, n as isize - 1) as usize);
    }

    fn go(&mut self, pos: usize) {
        if pos < self.model.order.len() {
            self.selected = Some(pos);
            self.message.clear();
        }
    }

    fn next(&mut self) {
        match self.model.next_unreviewed(self.selected) {
            Some(p) => self.go(p),
            None => self.message = "every file is reviewed".into(),
        }
    }

    fn current(&self) -> Option<&openfiles_wire::control::ReviewFile> {
        self.selected.and_then(|p| self.model.at(p))
    }

    fn call<R: Call>(&mut self, req: &R) -> anyhow::Result<R::Reply> {
        if let Some(c) = self.client.as_mut() {
            match c.call(req) {
                Ok(v) => return Ok(v),
                Err(_) => self.client = None,
            }
        }
        // The service restarted (or the connection dropped): connect again once.
        let mut c = Client::connect(&self.socket, Some(Duration::from_secs(10)))
            .context("the service is not answering")?;
        let v = c.call(req)?;
        self.client = Some(c);
        Ok(v)
    }

    fn toggle(&mut self) {
        let Some(f) = self.current() else { return };
        let (path, reviewed, key) = (f.entry.path.clone(), !f.mark.reviewed(), f.key.clone());
        let req = ReviewMark {
            paths: vec![path],
            reviewed,
        };
        match self.call(&req) {
            Ok(r) if r.marked.is_empty() => self.message = format!("{key} left the session"),
            Ok(_) => {
                self.message = format!(
                    "{key} {}",
                    if reviewed {
                        "marked reviewed"
                    } else {
                        "unmarked"
                    }
                )
            }
            Err(e) => self.message = format!("cannot mark {key}: {e:#}"),
        }
        self.reload();
    }

    /// When the service last rewrote the workspace's summary (it does after every change).
    fn summary_mtime(&self) -> Option<std::time::SystemTime> {
        let path = summary::summary_file(&crate::paths::state_dir(), &self.model.root);
        std::fs::metadata(path).and_then(|m| m.modified()).ok()
    }

    fn reload(&mut self) {
        self.seen = self.summary_mtime();
        let key = self.current().map(|f| f.key.clone());
        let dir = self.dir.clone();
        let fetched = match self.client.as_mut().map(|c| fetch(c, &dir)) {
            Some(Ok(r)) => Ok(r),
            _ => {
                self.client = None;
                Client::connect(&self.socket, Some(Duration::from_secs(10)))
                    .map_err(anyhow::Error::from)
                    .and_then(|mut c| {
                        let r = fetch(&mut c, &dir);
                        self.client = Some(c);
                        r
                    })
            }
        };
        match fetched {
            Ok(r) => {
                self.model = Model::new(r);
                let n = self.model.order.len();
                self.selected = key
                    .and_then(|k| self.model.position(&k))
                    .or(self.selected.map(|s| s.min(n.saturating_sub(1))))
                    .filter(|_| n > 0)
                    .or((n > 0).then_some(0));
            }
            Err(e) => self.message = format!("cannot reload: {e:#}"),
        }
    }

    /// Hand the terminal to the editor (or `git diff`), then take it back.
    fn handover(&mut self, terminal: &mut Term, diff: bool) -> anyhow::Result<()> {
        let Some(f) = self.current().cloned() else {
            return Ok(());
        };
        if diff {
            if let Err(why) = actions::diff_command(&self.model.root, &f) {
                self.message = why.to_string();
                return Ok(());
            }
        }
        restore();
        let outcome = if diff {
            let r = actions::diff(&self.model.root, &f)
                .map(|r| r.map(|()| String::new()).map_err(|why| why.to_string()));
            if r.is_ok() {
                wait_for_key();
            }
            r
        } else {
            actions::edit(&f).map(Ok)
        };
        *terminal = enter()?;
        terminal.clear()?;
        self.message = match outcome {
            Ok(Ok(m)) => m,
            Ok(Err(why)) => why,
            Err(e) => format!("{e:#}"),
        };
        self.reload();
        Ok(())
    }

    fn style(&self, s: Style) -> Style {
        if self.color {
            s
        } else {
            Style::default().add_modifier(s.add_modifier)
        }
    }

    fn draw(&self, frame: &mut ratatui::Frame) {
        let [top, body, detail, foot] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(1),
            Constraint::Length(4),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        frame.render_widget(Paragraph::new(self.head_line()), top);
        let (items, selected_row) = self.rows();
        if items.is_empty() {
            frame.render_widget(Paragraph::new("No file changed in this session yet."), body);
        } else {
            let mut state = ListState::default().with_selected(selected_row);
            let list = List::new(items)
                .highlight_style(Style::new().add_modifier(Modifier::REVERSED))
                .highlight_symbol("> ");
            frame.render_stateful_widget(list, body, &mut state);
        }
        frame.render_widget(Paragraph::new(self.detail_lines()), detail);
        frame.render_widget(Paragraph::new(self.foot_line()), foot);
    }

    /// The top line: the workspace and the session's totals, and whether it is paused.
    fn head_line(&self) -> Line<'static> {
        let t = self.model.totals();
        let mut head = vec![
            Span::styled(
                "openfiles review ",
                self.style(Style::new().add_modifier(Modifier::BOLD)),
            ),
            Span::raw(format!(
                "{}  ",
                escape(&self.model.root.display().to_string())
            )),
            Span::raw(format!(
                "{} files · {} unreviewed · ",
                t.files, t.unreviewed
            )),
            Span::styled(
                format!("{} errors", t.errors),
                self.style(Style::new().fg(Color::Red)),
            ),
            Span::raw(" · "),
            Span::styled(
                format!("{} warnings", t.warnings),
                self.style(Style::new().fg(Color::Yellow)),
            ),
        ];
        if t.pending > 0 {
            head.push(Span::raw(format!(" · {} checking", t.pending)));
        }
        if self.model.paused {
            head.push(Span::styled(
                " · PAUSED",
                self.style(Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD)),
            ));
        }
        Line::from(head)
    }

    /// The selected file: its path, its agents and its first three problems.
    fn detail_lines(&self) -> Vec<Line<'static>> {
        let Some(f) = self.current() else {
            return Vec::new();
        };
        let mut lines = vec![Line::from(format!(
            "{}  (edited by {})",
            escape(&f.entry.path.display().to_string()),
            escape(&f.mark.agents.join(", "))
        ))];
        lines.extend(f.entry.items.iter().take(3).map(|i| {
            Line::from(format!(
                "  {}:{} {} {}{}",
                i.line,
                i.column,
                model::severity_word(i.severity),
                escape(i.message.lines().next().unwrap_or("")),
                if i.source.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", escape(&i.source))
                }
            ))
        }));
        lines
    }

    /// The bottom line: the last message, and the keys.
    fn foot_line(&self) -> Line<'static> {
        let keys = "space mark · n next unreviewed · e edit · d diff · r reload · q quit";
        if self.message.is_empty() {
            Line::from(Span::styled(
                keys,
                self.style(Style::new().fg(Color::DarkGray)),
            ))
        } else {
            Line::from(vec![
                Span::styled(
                    escape(&self.message).into_owned(),
                    self.style(Style::new().add_modifier(Modifier::BOLD)),
                ),
                Span::raw("  "),
                Span::styled(keys, self.style(Style::new().fg(Color::DarkGray))),
            ])
        }
    }

    /// The list's rows (group headers and files) and the row of the selected file.
    fn rows(&self) -> (Vec<ListItem<'static>>, Option<usize>) {
        let mut rows = Vec::new();
        let mut selected_row = None;
        let mut pos = 0;
        let width = self
            .model
            .files
            .iter()
            .map(|f| escape(&f.key).chars().count())
            .max()
            .unwrap_or(0)
            .min(60);
        for g in &self.model.groups {
            rows.push(ListItem::new(Line::from(vec![
                Span::styled(
                    escape(&g.agent).into_owned(),
                    self.style(Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)),
                ),
                Span::raw(format!(
                    "  {} file{}, {} unreviewed, {}E {}W",
                    g.files.len(),
                    if g.files.len() == 1 { "" } else { "s" },
                    g.unreviewed,
                    g.errors,
                    g.warnings
                )),
            ])));
            for &i in &g.files {
                let f = &self.model.files[i];
                if self.selected == Some(pos) {
                    selected_row = Some(rows.len());
                }
                pos += 1;
                let reviewed = f.mark.reviewed();
                let (mark, mark_style) = if reviewed {
                    ("[x] ", Style::new().fg(Color::Green))
                } else {
                    ("[ ] ", Style::new())
                };
                let counts = super::problems_text(f);
                let count_style = if f.entry.errors > 0 {
                    Style::new().fg(Color::Red)
                } else if f.entry.warnings > 0 {
                    Style::new().fg(Color::Yellow)
                } else {
                    Style::new().fg(Color::DarkGray)
                };
                let key_style = if reviewed {
                    Style::new().add_modifier(Modifier::DIM)
                } else {
                    Style::new()
                };
                rows.push(ListItem::new(Line::from(vec![
                    Span::raw("  "),
                    Span::styled(mark, self.style(mark_style)),
                    Span::styled(
                        format!("{:<width$}  ", escape(&f.key)),
                        self.style(key_style),
                    ),
                    Span::styled(counts, self.style(count_style)),
                ])));
            }
        }
        (rows, selected_row)
    }
}

/// After a diff: hold the screen until a key is pressed (git's pager may have quit at once).
fn wait_for_key() {
    let mut out = std::io::stdout();
    let _ = write!(out, "\r\n-- press any key to return to the review --");
    let _ = out.flush();
    if enable_raw_mode().is_ok() {
        while let Ok(ev) = event::read() {
            if matches!(ev, Event::Key(k) if k.kind == KeyEventKind::Press) {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openfiles_wire::control::Mark;
    use openfiles_wire::control::{ReviewFile, WorkspaceReview};
    use openfiles_wire::spec::{FileEntry, Item, Severity};
    use ratatui::backend::TestBackend;

    #[test]
    fn names_agents_and_messages_are_drawn_escaped() {
        let osc = "\x1b]52;c;aGk=\x07";
        let key = format!("evil{osc}.txt");
        let item = Item {
            line: 1,
            column: 1,
            ..Item::note(Severity::Error, "rustc", format!("bad{osc}thing"))
        };
        let review = WorkspaceReview {
            root: "/home/me/proj".into(),
            paused: false,
            last_agent: Some(format!("claude{osc}")),
            files: vec![ReviewFile {
                key: key.clone(),
                mark: Mark {
                    agents: vec![format!("claude{osc}")],
                    last_agent: format!("claude{osc}"),
                    edited_at: 10,
                    reviewed_at: 0,
                },
                entry: FileEntry::checked(format!("/home/me/proj/{key}").into(), 5, vec![item]),
            }],
        };
        let app = App {
            client: None,
            socket: PathBuf::new(),
            dir: PathBuf::new(),
            model: Model::new(review),
            selected: Some(0),
            message: format!("cannot mark {key}"),
            color: false,
            seen: None,
        };
        let mut terminal = Terminal::new(TestBackend::new(100, 12)).unwrap();
        terminal.draw(|f| app.draw(f)).unwrap();
        let buf = terminal.backend().buffer();
        let raw: Vec<&str> = buf
            .content()
            .iter()
            .map(|c| c.symbol())
            .filter(|s| s.chars().any(char::is_control))
            .collect();
        assert!(raw.is_empty(), "control characters drawn: {raw:?}");
        let text: String = (0..buf.area.height)
            .map(|y| {
                (0..buf.area.width)
                    .map(|x| buf[(x, y)].symbol())
                    .collect::<String>()
                    + "\n"
            })
            .collect();
        // The agent (group header and detail), the name (row, detail, footer), the message
        // (row and detail).
        assert!(
            text.matches(r"\e]52;c;aGk=\x07").count() >= 6,
            "not shown escaped:\n{text}"
        );
    }
}
