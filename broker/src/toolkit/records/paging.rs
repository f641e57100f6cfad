//! Pages of a listing in id order (`list_panes`, `list_windows`): a page
//! starts after its cursor's id, whether or not that entity still exists, so
//! an entity made or gone between pages neither repeats nor hides another.

use tmux_mcp_engine::registry::numeric_id;

/// Entities per page unless `limit` says otherwise.
pub const PAGE: usize = 100;
/// The largest page (what the `tmux://panes` resource asks for).
pub const PAGE_MAX: usize = 10_000;

/// The `limit` default, for serde.
pub fn default_limit() -> usize {
    PAGE
}

/// One page of a listing, and what the caller tells about the rest.
pub struct Page<T> {
    pub items: Vec<T>,
    /// Entities that match, on every page.
    pub total: usize,
    /// The cursor of the next page while more remain.
    pub next: Option<String>,
}

/// The page of `items` (every match, in numeric id order) that holds at
/// most `limit` after `cursor`.
pub fn page<T>(
    items: Vec<T>,
    id: impl Fn(&T) -> &str,
    cursor: Option<&str>,
    limit: usize,
) -> Page<T> {
    let total = items.len();
    let after = cursor.map(numeric_id);
    let mut rest = items
        .into_iter()
        .filter(|t| after.is_none_or(|a| numeric_id(id(t)) > a))
        .peekable();
    let page: Vec<T> = rest.by_ref().take(limit).collect();
    let next = rest.peek().and(page.last()).map(|t| id(t).to_string());
    Page {
        items: page,
        total,
        next,
    }
}

impl<T> Page<T> {
    /// The text result's line about the rest (`noun` like `pane(s)`), while
    /// there is a next page.
    pub fn more_line(&self, noun: &str) -> Option<String> {
        self.next.as_ref().map(|c| {
            format!(
                "{} of {} {noun} on this page; the next page: cursor {c}",
                self.items.len(),
                self.total
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_continue_after_the_cursor_even_when_it_is_gone() {
        let ids = vec!["%1", "%2", "%10", "%11"];
        let p = page(ids, |s| s, None, 2);
        assert_eq!((p.items, p.next.as_deref()), (vec!["%1", "%2"], Some("%2")));
        // %2 went away; %3 is new and sorts before %10: nothing repeats or hides.
        let ids = vec!["%1", "%3", "%10", "%11"];
        let p = page(ids.clone(), |s| s, Some("%2"), 2);
        assert_eq!(
            (p.items, p.next),
            (vec!["%3", "%10"], Some("%10".to_string()))
        );
        let p = page(ids, |s| s, Some("%10"), 2);
        assert_eq!((p.items, p.next), (vec!["%11"], None));
    }
}
