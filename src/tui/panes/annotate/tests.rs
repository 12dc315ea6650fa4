//! The Annotate pane's state, driven by its keys and the reads of the study.

use super::*;

fn item(id: &str) -> Item {
    Item {
        item_id: id.into(),
        set: "s".into(),
        question: "How is flu spread?".into(),
        reference_answer: String::new(),
        target_chunk: String::new(),
        answer: "By droplets.".into(),
        answer_id: None,
        ..Default::default()
    }
}

/// ann's pane on one item, her first label (`p`: pass on the first criterion) given
/// and its save asked for: the pane, the save's ticket and the label.
fn with_a_label_given() -> (AnnotatePane, u64, Label) {
    let mut pane = AnnotatePane::new(AnnotateSettings {
        reviewer: Some("ann".into()),
        ..AnnotateSettings::default()
    });
    pane.load_with(vec![item("i1")], Vec::new(), Schedule::default());
    let Some(Effect::SaveLabel { ticket, label }) = pane.update(Action::LabelPass) else {
        panic!("a label key asks for a save");
    };
    (pane, ticket, label)
}

/// [`with_a_label_given`], the label saved.
fn with_a_saved_label() -> (AnnotatePane, Label) {
    let (mut pane, ticket, label) = with_a_label_given();
    pane.on_saved(ticket, Ok(1.0));
    (pane, label)
}

#[test]
fn a_saved_label_waits_for_a_read_and_goes_when_the_read_refuses_it() {
    let (mut pane, label) = with_a_saved_label();
    let criterion = label.criterion.clone();
    assert!(pane.label_of("i1", "ann", &criterion).is_some());
    // A read made before the commit landed does not hold it yet: it is kept.
    pane.on_study_read(
        StudyTrust::default(),
        vec![item("i1")],
        Vec::new(),
        Schedule::default(),
    );
    assert!(pane.label_of("i1", "ann", &criterion).is_some());
    // A read that refuses that very row: it counts no more.
    let refused = Refusal {
        item: Some("i1".into()),
        row: Some(label.label_id.clone()),
        why: "label of item i1 claims reviewer ann but is not signed by ann's key".into(),
    };
    pane.on_study_read(
        StudyTrust {
            refused: vec![refused],
            ..StudyTrust::default()
        },
        vec![item("i1")],
        Vec::new(),
        Schedule::default(),
    );
    assert!(pane.label_of("i1", "ann", &criterion).is_none());
    assert!(pane.labels().is_empty());
}

#[test]
fn a_refusal_of_another_row_keeps_the_saved_label() {
    let (mut pane, label) = with_a_saved_label();
    let other = Refusal {
        item: Some("i1".into()),
        row: Some("another-label".into()),
        why: "a copied row".into(),
    };
    pane.on_study_read(
        StudyTrust {
            refused: vec![other],
            ..StudyTrust::default()
        },
        vec![item("i1")],
        Vec::new(),
        Schedule::default(),
    );
    assert!(
        pane.label_of("i1", "ann", &label.criterion).is_some(),
        "only the refused row goes"
    );
}

/// A lead's pane opened before the roster was founded: a read of a roster founded
/// with another key closes the lead's view; one founded with this user's key keeps it.
#[test]
fn a_lead_is_checked_again_at_each_read_of_the_roster() {
    use crate::core::blinding::Viewer;
    use crate::core::signing::toy::{ANN, LENA, study};
    let (roster, _) = study("n1");
    for (my_key, stays) in [(LENA, true), (ANN, false)] {
        let mut pane = AnnotatePane::new(AnnotateSettings {
            lead: true,
            ..AnnotateSettings::default()
        });
        pane.load_with(vec![item("i1")], Vec::new(), Schedule::default());
        assert_eq!(pane.viewer(), Viewer::Lead);
        let dropped = pane.on_study_read(
            StudyTrust {
                roster: roster.clone(),
                my_key: Some(my_key.into()),
                ..StudyTrust::default()
            },
            vec![item("i1")],
            Vec::new(),
            Schedule::default(),
        );
        assert_eq!(dropped, !stays, "key {my_key}");
        assert_eq!(pane.is_lead(), stays);
        assert_eq!(pane.viewer() == Viewer::Lead, stays);
        if !stays {
            let said = pane.status().expect("said");
            assert!(said.contains("not this study's lead"), "{said}");
            assert!(said.contains("lena"), "{said}");
        }
    }
}

/// The progress line as drawn.
fn screen(pane: &AnnotatePane) -> String {
    crate::tui::ui::pane_screen(pane, 200, 20)
}

/// A label the study's rules refuse and a label whose store failed are said apart on
/// screen: only the second asks the reviewer to give it again; neither is kept.
#[test]
fn a_refused_label_and_a_failed_store_are_said_apart() {
    for (error, said, retry) in [
        (
            SaveError::Refused("label x: `maybe` is not a label of accuracy".into()),
            "NOT saved (refused): label x: `maybe` is not a label",
            false,
        ),
        (
            SaveError::Failed("the object store timed out".into()),
            "NOT saved (storing failed; give the label again): the object store timed out",
            true,
        ),
    ] {
        let (mut pane, ticket, label) = with_a_label_given();
        pane.on_saved(ticket, Err(error));
        let shown = screen(&pane);
        assert!(shown.contains(said), "{shown}");
        assert_eq!(shown.contains("give the label again"), retry, "{shown}");
        assert!(pane.label_of("i1", "ann", &label.criterion).is_none());
    }
}
