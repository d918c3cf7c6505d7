//! Context selection: which entries the model sees, with the reference's semantics for
//! `buildContextEntries` / `buildSessionProjection`, plus the spec's `retainedTail` checkpoint.
//!
//! This works on indices only; turning the selected entries into messages needs their JS
//! objects and happens in the binding's JS layer, for the selected (usually small) tail.

use crate::entry::{EntryType, Key, Role};
use crate::tree::Tree;
use std::collections::HashMap;

/// One selected entry of the context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selected {
    /// Index into the tree's entries.
    pub index: u32,
    /// Index of the latest `context_edit` (within the selection) targeting this entry.
    pub edit: Option<u32>,
}

/// Model and thinking level from the whole path (`getSessionContextSettings`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Index of the last `thinking_level_change` on the path.
    pub thinking_from: Option<u32>,
    /// Index of the last `model_change` or assistant message on the path.
    pub model_from: Option<u32>,
}

/// The full plan for a projection.
#[derive(Debug, Default, Clone)]
pub struct Plan {
    pub selected: Vec<Selected>,
    pub settings: Settings,
    /// The ids that `context_edit` entries among the selected ones target (each once, in no
    /// particular order): an entry appended later with one of these ids would be edited.
    pub edit_targets: Vec<Key>,
}

/// `buildContextEntries` over a root-first path of indices.
pub fn context_entries(tree: &Tree, path: &[u32]) -> Vec<u32> {
    let at = |i: u32| &tree.entries[i as usize];
    let Some(cpos) = path
        .iter()
        .rposition(|&i| at(i).etype == EntryType::Compaction)
    else {
        return path.to_vec();
    };
    let compaction = at(path[cpos]);
    // The reference finds the compaction by id (first entry on the path with that id).
    let cidx = path
        .iter()
        .position(|&i| at(i).id == compaction.id)
        .unwrap_or(cpos);
    let mut out = vec![path[cpos]];
    if !compaction.retained_tail {
        let first_kept: Option<&Key> = compaction.first_kept();
        let mut found = false;
        for &i in &path[..cidx] {
            let e = at(i);
            if Some(&e.id) == first_kept {
                found = true;
            }
            if found && !(e.etype == EntryType::Message && e.role == Role::System) {
                out.push(i);
            }
        }
    }
    out.extend_from_slice(&path[cidx + 1..]);
    out
}

/// Settings from the whole path.
pub fn settings(tree: &Tree, path: &[u32]) -> Settings {
    let mut s = Settings::default();
    for &i in path {
        let e = &tree.entries[i as usize];
        match e.etype {
            EntryType::ThinkingLevelChange => s.thinking_from = Some(i),
            EntryType::ModelChange => s.model_from = Some(i),
            EntryType::Message if e.role == Role::Assistant => s.model_from = Some(i),
            _ => {}
        }
    }
    s
}

/// `buildSessionProjection` as a plan over the current leaf.
pub fn plan(tree: &Tree) -> Plan {
    plan_over(tree, &tree.session_path())
}

fn plan_over(tree: &Tree, path: &[u32]) -> Plan {
    let path = path.to_vec();
    let settings = settings(tree, &path);
    let entries = context_entries(tree, &path);
    // Latest context_edit per target among the selected entries.
    let mut edits: HashMap<&str, u32> = HashMap::new();
    for &i in &entries {
        let e = &tree.entries[i as usize];
        if e.etype == EntryType::ContextEdit
            && let Some(t) = e.target().map(|k| k.as_str())
        {
            edits.insert(t, i);
        }
    }
    let selected = entries
        .iter()
        .map(|&i| Selected {
            index: i,
            edit: tree
                .entries
                .get(i as usize)
                .and_then(|e| edits.get(e.id.as_str()).copied()),
        })
        .collect();
    let edit_targets = edits.keys().map(|&t| Key::from(t)).collect();
    Plan {
        selected,
        settings,
        edit_targets,
    }
}

/// The last plan made ([`plan_with`]), with the path it was made over.
#[derive(Debug, Clone)]
pub struct PlanMemo {
    /// [`Tree::epoch`] then: while it stays, paths walked then are unchanged.
    epoch: u64,
    /// Entries then; the path's start (its last entry).
    len: usize,
    start: Option<usize>,
    path: Vec<u32>,
    plan: Plan,
}

/// [`plan`], extending the last one when the leaf has only moved on to entries appended since
/// (each turn of a conversation): the new entries are walked back to the last plan's leaf, and
/// the selection and settings are those of before plus the new entries. Anything else (a
/// compaction or context edit among the new entries, an edit in the plan, another branch, a
/// change of parent resolutions) makes the plan afresh. A giant session's plan costs a walk
/// of its whole path (~20 ms for 321,395 entries); pi asks for one after every append.
pub fn plan_with(tree: &Tree, memo: &mut Option<PlanMemo>) -> Plan {
    let start = tree.path_start();
    if let Some(m) = memo.as_ref()
        && m.epoch == tree.epoch
        && let Some(p) = extend(tree, m, start)
    {
        *memo = Some(PlanMemo {
            epoch: m.epoch,
            len: tree.entries.len(),
            start,
            path: p.1,
            plan: p.0.clone(),
        });
        return p.0;
    }
    let path = tree.session_path();
    let p = plan_over(tree, &path);
    *memo = Some(PlanMemo {
        epoch: tree.epoch,
        len: tree.entries.len(),
        start,
        path,
        plan: p.clone(),
    });
    p
}

/// The memo's plan and path extended to the path from `start`, if it runs through the memo's
/// start by entries appended since, none of them a compaction or a context edit.
fn extend(tree: &Tree, m: &PlanMemo, start: Option<usize>) -> Option<(Plan, Vec<u32>)> {
    if start == m.start && tree.entries.len() == m.len {
        return Some((m.plan.clone(), m.path.clone()));
    }
    if !m.plan.edit_targets.is_empty() {
        return None;
    }
    let (mut cur, end) = (start?, m.start?);
    let mut added = Vec::new();
    while cur != end {
        // Only entries appended since the memo: an older one means another branch.
        if cur < m.len {
            return None;
        }
        let e = tree.entries.get(cur)?;
        if matches!(e.etype, EntryType::Compaction | EntryType::ContextEdit) {
            return None;
        }
        added.push(cur as u32);
        cur = tree.parent_index(cur)?;
    }
    added.reverse();
    let mut plan = m.plan.clone();
    let mut path = m.path.clone();
    for &i in &added {
        let e = &tree.entries[i as usize];
        match e.etype {
            EntryType::ThinkingLevelChange => plan.settings.thinking_from = Some(i),
            EntryType::ModelChange => plan.settings.model_from = Some(i),
            EntryType::Message if e.role == Role::Assistant => plan.settings.model_from = Some(i),
            _ => {}
        }
        plan.selected.push(Selected {
            index: i,
            edit: None,
        });
        path.push(i);
    }
    Some((plan, path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::Entry;

    fn tree(lines: &[&str]) -> Tree {
        Tree::from_entries(
            lines
                .iter()
                .map(|l| Entry::parse(l.to_string(), 0).expect("valid"))
                .collect(),
        )
    }

    const H: &str = r#"{"type":"session","id":"s","version":3}"#;

    #[test]
    fn compaction_keeps_from_first_kept_and_drops_system() {
        let t = tree(&[
            H,
            r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user"}}"#,
            r#"{"type":"message","id":"b","parentId":"a","message":{"role":"system"}}"#,
            r#"{"type":"message","id":"c","parentId":"b","message":{"role":"assistant"}}"#,
            r#"{"type":"compaction","id":"k","parentId":"c","firstKeptEntryId":"b"}"#,
            r#"{"type":"message","id":"d","parentId":"k","message":{"role":"user"}}"#,
        ]);
        let path = t.session_path();
        assert_eq!(context_entries(&t, &path), vec![4, 3, 5]);
    }

    #[test]
    fn retained_tail_is_a_checkpoint() {
        let t = tree(&[
            H,
            r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user"}}"#,
            r#"{"type":"compaction","id":"k","parentId":"a","firstKeptEntryId":"a","retainedTail":[]}"#,
            r#"{"type":"message","id":"d","parentId":"k","message":{"role":"user"}}"#,
        ]);
        let path = t.session_path();
        assert_eq!(context_entries(&t, &path), vec![2, 3]);
    }

    #[test]
    fn latest_edit_wins_and_settings() {
        let t = tree(&[
            H,
            r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user"}}"#,
            r#"{"type":"thinking_level_change","id":"t","parentId":"a","thinkingLevel":"high"}"#,
            r#"{"type":"context_edit","id":"e1","parentId":"t","targetId":"a","replacement":null}"#,
            r#"{"type":"context_edit","id":"e2","parentId":"e1","targetId":"a","replacement":null}"#,
            r#"{"type":"message","id":"b","parentId":"e2","message":{"role":"assistant"}}"#,
        ]);
        let p = plan(&t);
        assert_eq!(p.selected[0].edit, Some(4));
        assert_eq!(p.settings.thinking_from, Some(2));
        assert_eq!(p.settings.model_from, Some(5));
        // Each edited id once, including one that no entry has (yet).
        assert_eq!(p.edit_targets, vec![Key::from("a")]);
        let t = tree(&[
            H,
            r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user"}}"#,
            r#"{"type":"context_edit","id":"e1","parentId":"a","targetId":"later","replacement":null}"#,
        ]);
        assert_eq!(plan(&t).edit_targets, vec![Key::from("later")]);
        let t = tree(&[H, r#"{"type":"message","id":"a","parentId":null}"#]);
        assert!(plan(&t).edit_targets.is_empty());
    }

    /// Every step of a conversation, its plan extended ([`plan_with`]) and made afresh
    /// ([`plan`]) side by side: the same selection and settings each time.
    #[test]
    fn an_extended_plan_is_the_plan_made_afresh() {
        let mut t = tree(&[
            H,
            r#"{"type":"thinking_level_change","id":"t0","parentId":null,"thinkingLevel":"low"}"#,
            r#"{"type":"message","id":"a","parentId":"t0","message":{"role":"user"}}"#,
            r#"{"type":"message","id":"b","parentId":"a","message":{"role":"system"}}"#,
            r#"{"type":"message","id":"c","parentId":"b","message":{"role":"assistant"}}"#,
            r#"{"type":"compaction","id":"k","parentId":"c","firstKeptEntryId":"b"}"#,
            r#"{"type":"message","id":"d","parentId":"k","message":{"role":"user"}}"#,
        ]);
        let mut memo = None;
        let same = |t: &Tree, memo: &mut Option<PlanMemo>, what: &str| {
            let got = plan_with(t, memo);
            let want = plan(t);
            assert_eq!(got.selected, want.selected, "{what}");
            assert_eq!(got.settings, want.settings, "{what}");
        };
        same(&t, &mut memo, "first");
        let push =
            |t: &mut Tree, line: &str| t.push(Entry::parse(line.to_string(), 0).expect("valid"));
        // Turns appended on the leaf: extended.
        push(
            &mut t,
            r#"{"type":"message","id":"e","parentId":"d","message":{"role":"assistant"}}"#,
        );
        push(
            &mut t,
            r#"{"type":"model_change","id":"m","parentId":"e","provider":"p","modelId":"x"}"#,
        );
        let extends = |t: &Tree, memo: &Option<PlanMemo>| {
            let m = memo.as_ref().expect("a memo");
            m.epoch == t.epoch && extend(t, m, t.path_start()).is_some()
        };
        assert!(extends(&t, &memo), "turns on the leaf extend the plan");
        same(&t, &mut memo, "appends");
        push(
            &mut t,
            r#"{"type":"thinking_level_change","id":"t1","parentId":"m","thinkingLevel":"high"}"#,
        );
        same(&t, &mut memo, "a thinking change");
        // The same leaf again, then a move back to an older entry (branch) and a turn there.
        same(&t, &mut memo, "again");
        t.leaf = Some(Key::from("d"));
        assert!(!extends(&t, &memo), "another branch is planned afresh");
        same(&t, &mut memo, "branch back");
        // A turn on the other branch; a compaction and a context edit among new entries.
        for (line, what) in [
            (
                r#"{"type":"message","id":"f","parentId":"d","message":{"role":"user"}}"#,
                "a turn on the other branch",
            ),
            (
                r#"{"type":"compaction","id":"k2","parentId":"f","firstKeptEntryId":"d"}"#,
                "a compaction",
            ),
            (
                r#"{"type":"context_edit","id":"x","parentId":"k2","targetId":"d","replacement":null}"#,
                "a context edit",
            ),
            (
                r#"{"type":"message","id":"g","parentId":"x","message":{"role":"user"}}"#,
                "after an edit",
            ),
        ] {
            push(&mut t, line);
            if what == "a compaction" {
                assert!(!extends(&t, &memo), "a compaction is planned afresh");
            }
            same(&t, &mut memo, what);
        }
        // A repeated id (parent resolutions change), and an undone append.
        push(
            &mut t,
            r#"{"type":"message","id":"g","parentId":"g","message":{"role":"user"}}"#,
        );
        same(&t, &mut memo, "a repeated id");
        let e = Entry::parse(
            r#"{"type":"message","id":"h","parentId":"g","message":{"role":"assistant"}}"#
                .to_string(),
            0,
        )
        .expect("valid");
        let undo = t.undo_info(&e);
        let leaf = t.leaf.clone();
        t.push(e);
        same(&t, &mut memo, "before the undo");
        t.pop(leaf, undo);
        same(&t, &mut memo, "after the undo");
        // No leaf: an empty plan.
        t.leaf = None;
        same(&t, &mut memo, "no leaf");
    }
}
