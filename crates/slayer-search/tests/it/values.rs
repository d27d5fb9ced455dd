//! The value index (docs/spec/profile.md §12.4) from profiling to search: a question that names a
//! value finds the column holding it, also when the value is not among the column's top 50.

use std::path::Path;

use serde_json::Value;

use crate::support::{ids, run, TempStore};

/// California's 58 counties; the first ones are the most frequent in the generated schools.
const COUNTIES: [&str; 58] = [
    "Los Angeles",
    "San Diego",
    "Orange",
    "Riverside",
    "San Bernardino",
    "Santa Clara",
    "Sacramento",
    "Contra Costa",
    "Fresno",
    "Kern",
    "San Francisco",
    "Ventura",
    "San Mateo",
    "San Joaquin",
    "Stanislaus",
    "Sonoma",
    "Tulare",
    "Solano",
    "Monterey",
    "Santa Barbara",
    "Placer",
    "San Luis Obispo",
    "Santa Cruz",
    "Merced",
    "Marin",
    "Butte",
    "Yolo",
    "El Dorado",
    "Imperial",
    "Shasta",
    "Madera",
    "Kings",
    "Napa",
    "Humboldt",
    "Nevada",
    "Sutter",
    "Mendocino",
    "Yuba",
    "Lake",
    "Tehama",
    "San Benito",
    "Tuolumne",
    "Calaveras",
    "Siskiyou",
    "Amador",
    "Lassen",
    "Glenn",
    "Del Norte",
    "Colusa",
    "Plumas",
    "Inyo",
    "Mariposa",
    "Mono",
    "Trinity",
    "Modoc",
    "Sierra",
    "Alpine",
    "Alameda",
];

/// A warehouse of schools and their students, with realistic names and skewed counts: Alameda
/// is the rarest county (past the top 50 of `county`), gender is Female / Male / Nonbinary.
fn warehouse(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("edu.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE schools (cds_code TEXT PRIMARY KEY, school_name TEXT, county TEXT, \
             district TEXT, charter INTEGER);
         CREATE TABLE students (student_id INTEGER PRIMARY KEY, cds_code TEXT, gender TEXT, \
             grade INTEGER, enrolled_on DATE);",
    )
    .unwrap();
    let tx = conn.unchecked_transaction().unwrap();
    let mut school = 0;
    for (rank, county) in COUNTIES.iter().enumerate() {
        // 60 schools in the largest county, one in the last ones.
        let schools = (60 - rank).max(1);
        for n in 0..schools {
            school += 1;
            tx.execute(
                "INSERT INTO schools VALUES (?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![
                    format!("{school:014}"),
                    format!(
                        "{county} {} School",
                        ["Elementary", "Middle", "High"][n % 3]
                    ),
                    county,
                    format!("{county} Unified"),
                    (n % 4 == 0) as i64
                ],
            )
            .unwrap();
        }
    }
    for student in 0..3000 {
        let gender = ["Female", "Male", "Female", "Male", "Nonbinary"][student % 5];
        tx.execute(
            "INSERT INTO students VALUES (?1, ?2, ?3, ?4, '2024-09-01')",
            rusqlite::params![
                student,
                format!("{:014}", student % school + 1),
                gender,
                (student % 12 + 1) as i64
            ],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    path
}

#[test]
fn a_question_naming_a_value_finds_the_column_holding_it() {
    let dir = tempfile::tempdir().unwrap();
    let source = warehouse(dir.path());
    let profiled = run(
        "slayer-profile",
        Path::new("/nonexistent/store"),
        &[source.to_str().unwrap(), "--datasource", "edu"],
        None,
    );
    assert_eq!(profiled.code, 0, "{}", profiled.stderr);
    let county: Value = profiled
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["name"] == "schools")
        .map(|m| m["columns"][2].clone())
        .unwrap();
    assert_eq!(county["name"], "county");
    let top: Vec<&str> = county["sampled_values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(top.len(), 50);
    assert!(!top.contains(&"Alameda"), "Alameda is past the top 50");
    assert!(
        county["value_index"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v == "Alameda"),
        "{county}"
    );

    let store = TempStore::new();
    let loaded = run(
        "slayer-index",
        &store.store,
        &["load", "-"],
        Some(&profiled.stdout),
    );
    assert_eq!(loaded.code, 0, "{}", loaded.stderr);
    let search = |question: &str| {
        let out = run(
            "slayer-search",
            &store.store,
            &[
                "--question",
                question,
                "--channels",
                "entities,text",
                "--max-entities",
                "4",
            ],
            None,
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        ids(&serde_json::from_str(&out.stdout).unwrap(), "entities")
    };
    let alameda = search("How many charter schools are there in Alameda?");
    assert!(
        alameda.contains(&"edu.schools.county".to_owned()),
        "{alameda:?}"
    );
    // A value among the top ones is in the column's doc already.
    let female = search("how many female students");
    assert!(
        female.contains(&"edu.students.gender".to_owned()),
        "{female:?}"
    );
    // A word no value holds finds no column through the index.
    let none = search("Oakland");
    assert!(!none.contains(&"edu.schools.county".to_owned()), "{none:?}");
}
