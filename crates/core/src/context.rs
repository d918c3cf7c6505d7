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
    let path = tree.session_path();
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
}
