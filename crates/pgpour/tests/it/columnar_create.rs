//! `--create` from a Parquet or Arrow file's schema: each column's type
//! from its Arrow type (or as given), the rows then the same as COPY makes
//! of their text in a table of those types; a column that could not be
//! loaded is named before the table is made.

use std::path::Path;
use std::sync::Arc;

use arrow_array::*;
use arrow_schema::{DataType, Field, Schema, UnionFields, UnionMode};
use pgpour::{CreateRequest, LoadRequest};
use pgpour_testkit::parquet::{write_arrow_file, write_parquet};
use pgpour_testkit::{shared_cluster, TestDb};

use crate::columnar::{copy_text, rows, typed_batch};
use crate::harness::{connect, load};

/// `load path --table table --create [--types ...]`, resolved.
fn create(
    db: &TestDb,
    path: &Path,
    table: &str,
    types: &[(&str, &str)],
) -> pgpour::Result<pgpour::LoadOptions> {
    let mut request = LoadRequest::new(vec![path.display().to_string()], table);
    let mut create = CreateRequest::default();
    create.types.types = types
        .iter()
        .map(|(c, t)| (c.to_string(), t.to_string()))
        .collect();
    request.create = Some(create);
    Ok(request.resolve(&connect(db), &|_| None)?.options)
}

/// The table's columns as `name type`, in order.
fn columns_of(db: &TestDb, table: &str) -> String {
    db.client()
        .query_one(
            "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod) \
               || CASE WHEN attnotnull THEN ' not null' ELSE '' END, ', ' ORDER BY attnum) \
             FROM pg_attribute WHERE attrelid = $1::text::regclass AND attnum > 0",
            &[&table],
        )
        .unwrap()
        .get(0)
}

fn exists(db: &TestDb, table: &str) -> bool {
    db.client()
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])
        .unwrap()
        .get(0)
}

#[test]
fn create_makes_each_column_of_its_arrow_type_and_loads_as_copy() {
    let db = shared_cluster().create_database("columnar_create_types");
    let (batch, csv) = typed_batch();
    // Required (not nullable) in the file: no NOT NULL in the table.
    let schema = batch.schema();
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields[0] = Field::new("id", DataType::Int64, false);
    let batch =
        RecordBatch::try_new(Arc::new(Schema::new(fields)), batch.columns().to_vec()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let parquet = dir.path().join("typed.parquet");
    write_parquet(&parquet, &batch, 2);
    let arrow = dir.path().join("typed.arrow");
    write_arrow_file(&arrow, std::slice::from_ref(&batch));
    let given = [("f8n", "double precision"), ("j", "jsonb")];
    let expected_types = "id bigint, i2 smallint, i4 integer, i8 bigint, n bigint, f4 real, \
        f8 double precision, f4w double precision, f8n double precision, d numeric(38,10), \
        d2 numeric(12,3), d256 numeric(50,5), dt date, tm time without time zone, \
        ts timestamp without time zone, tstz timestamp with time zone, b boolean, s text, \
        ls text, dict text, by bytea, u uuid, j jsonb";
    for (path, table) in [(&parquet, "from_parquet"), (&arrow, "from_arrow")] {
        let options = create(&db, path, table, &given).unwrap();
        let summary = load(&db, &options).unwrap_or_else(|f| panic!("{table}: {}", f.error));
        assert_eq!(summary.rows_loaded, 3, "{table}");
        assert_eq!(columns_of(&db, table), expected_types, "{table}");
        let copied = format!("copied_{table}");
        db.client()
            .batch_execute(&format!("CREATE TABLE {copied} (LIKE {table})"))
            .unwrap();
        copy_text(&db, &copied, &csv);
        assert_eq!(rows(&db, table), rows(&db, &copied), "{table}");
    }
}

#[test]
fn create_refuses_a_column_it_cannot_load_before_making_the_table() {
    let db = shared_cluster().create_database("columnar_create_refused");
    let dir = tempfile::tempdir().unwrap();
    // A union: no column type takes it.
    let union_fields =
        UnionFields::try_new(vec![0], vec![Field::new("n", DataType::Int32, true)]).unwrap();
    let union_type = DataType::Union(union_fields.clone(), UnionMode::Sparse);
    let child = Arc::new(Int32Array::from(vec![7])) as ArrayRef;
    let union =
        Arc::new(UnionArray::try_new(union_fields, vec![0i8].into(), None, vec![child]).unwrap())
            as ArrayRef;
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("at", DataType::Date32, true),
        Field::new("odd", union_type, true),
    ]);
    let batch = RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(Int64Array::from(vec![1])),
            Arc::new(Date32Array::from(vec![0])),
            union,
        ],
    )
    .unwrap();
    let path = dir.path().join("odd.arrow");
    write_arrow_file(&path, &[batch]);

    let refused = create(&db, &path, "t", &[]).unwrap_err();
    let said = refused.to_string();
    assert!(
        matches!(&refused, pgpour::Error::ColumnarCreate { column, given: None, .. } if column == "odd"),
        "{said}"
    );
    assert!(
        said.contains("odd.arrow") && said.contains("\"odd\""),
        "{said}"
    );

    // A given type that does not take the column's values.
    let mut request = LoadRequest::new(vec![path.display().to_string()], "t");
    request.columns = Some(vec!["id".into(), "at".into()]);
    let mut made = CreateRequest::default();
    made.types.types = vec![("at".into(), "integer".into())];
    request.create = Some(made);
    let refused = request.resolve(&connect(&db), &|_| None).unwrap_err();
    assert!(
        matches!(&refused, pgpour::Error::ColumnarCreate { column, given: Some(g), .. } if column == "at" && g == "integer"),
        "{refused}"
    );
    // A type for a column the load does not have.
    let refused = create(&db, &path, "t", &[("nope", "text")]).unwrap_err();
    assert!(refused.to_string().contains("nope"), "{refused}");
    assert!(!exists(&db, "t"), "nothing was made");

    // The columns chosen make the table, the others left out.
    let mut request = LoadRequest::new(vec![path.display().to_string()], "t");
    request.columns = Some(vec!["at".into(), "id".into()]);
    request.create = Some(CreateRequest::default());
    let options = request.resolve(&connect(&db), &|_| None).unwrap().options;
    load(&db, &options).unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(columns_of(&db, "t"), "at date, id bigint");
    assert_eq!(rows(&db, "t"), ["(1970-01-01,1)"]);
}

#[test]
fn a_null_type_column_loads_nulls_into_any_column() {
    let db = shared_cluster().create_database("columnar_null_type");
    db.client()
        .batch_execute(
            "CREATE TYPE mood AS ENUM ('ok'); \
             CREATE TABLE t (id bigint, nothing mood, also int DEFAULT 5)",
        )
        .unwrap();
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("nothing", DataType::Null, true),
    ]);
    let batch = RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(Int64Array::from(vec![1, 2, 3])),
            Arc::new(NullArray::new(3)),
        ],
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let parquet = dir.path().join("nulls.parquet");
    write_parquet(&parquet, &batch, 2);
    let arrow = dir.path().join("nulls.arrow");
    write_arrow_file(&arrow, std::slice::from_ref(&batch));
    for path in [&parquet, &arrow] {
        db.client().batch_execute("TRUNCATE t").unwrap();
        let options = LoadRequest::new(vec![path.display().to_string()], "t")
            .resolve(&connect(&db), &|_| None)
            .unwrap()
            .options;
        load(&db, &options).unwrap_or_else(|f| panic!("{}", f.error));
        assert_eq!(rows(&db, "t"), ["(1,,5)", "(2,,5)", "(3,,5)"], "{path:?}");
        let table = format!("made_{}", path.extension().unwrap().to_str().unwrap());
        let options = create(&db, path, &table, &[]).unwrap();
        load(&db, &options).unwrap_or_else(|f| panic!("{}", f.error));
        assert_eq!(columns_of(&db, &table), "id bigint, nothing text");
        assert_eq!(rows(&db, &table), ["(1,)", "(2,)", "(3,)"]);
    }
}

/// Lists into one-dimensional arrays, as COPY reads their text: empty and
/// NULL lists, NULL elements, strings that need quotes; `--create` makes
/// them arrays of their element's type.
#[test]
fn lists_load_into_arrays_as_copy_loads_their_text() {
    use arrow_array::builder::{FixedSizeListBuilder, Float64Builder, ListBuilder, StringBuilder};
    let db = shared_cluster().create_database("columnar_lists");
    let ints = ListArray::from_iter_primitive::<arrow_array::types::Int32Type, _, _>(vec![
        Some(vec![Some(1), Some(2), None]),
        Some(vec![]),
        None,
    ]);
    let longs = LargeListArray::from_iter_primitive::<arrow_array::types::Int64Type, _, _>(vec![
        Some(vec![Some(i64::MIN)]),
        None,
        Some(vec![Some(0), Some(7)]),
    ]);
    let mut texts = ListBuilder::new(StringBuilder::new());
    texts.append_value([Some("a"), Some("b \"c\" \\"), None]);
    texts.append_value([Some("{}")]);
    texts.append_value([] as [Option<&str>; 0]);
    let mut pairs = FixedSizeListBuilder::new(Float64Builder::new(), 2);
    for (x, y) in [(0.5, -1.0), (f64::NAN, 2.0), (3.0, 4.0)] {
        pairs.values().append_value(x);
        pairs.values().append_value(y);
        pairs.append(true);
    }
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("id", Arc::new(Int64Array::from(vec![1, 2, 3]))),
        ("li", Arc::new(ints)),
        ("ll", Arc::new(longs)),
        ("lt", Arc::new(texts.finish())),
        ("fx", Arc::new(pairs.finish())),
    ];
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, array)| Field::new(*name, array.data_type().clone(), true))
        .collect();
    let arrays = columns.into_iter().map(|(_, a)| a).collect();
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap();
    let csv = "1,\"{1,2,NULL}\",{-9223372036854775808},\"{\"\"a\"\",\"\"b \\\"\"c\\\"\" \\\\\"\",NULL}\",\"{0.5,-1}\"\n\
               2,{},,\"{\"\"{}\"\"}\",\"{NaN,2}\"\n\
               3,,\"{0,7}\",{},\"{3,4}\"\n";
    let ddl = "id bigint, li integer[], ll bigint[], lt text[], fx double precision[]";
    db.client()
        .batch_execute(&format!("CREATE TABLE t ({ddl}); CREATE TABLE a ({ddl})"))
        .unwrap();
    copy_text(&db, "t", csv);
    let expected = rows(&db, "t");
    let dir = tempfile::tempdir().unwrap();
    let arrow = dir.path().join("lists.arrow");
    write_arrow_file(&arrow, &[batch.slice(0, 1), batch.slice(1, 2)]);
    let options = LoadRequest::new(vec![arrow.display().to_string()], "a")
        .resolve(&connect(&db), &|_| None)
        .unwrap()
        .options;
    load(&db, &options).unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(rows(&db, "a"), expected);
    let parquet = dir.path().join("lists.parquet");
    write_parquet(&parquet, &batch, 2);
    let options = create(&db, &parquet, "made", &[]).unwrap();
    load(&db, &options).unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(
        columns_of(&db, "made"),
        "id bigint, li integer[], ll bigint[], lt text[], fx double precision[]"
    );
    assert_eq!(rows(&db, "made"), expected);
}

/// Structs and maps into jsonb (and json, as the JSON text pgpour writes),
/// as COPY reads the same JSON: nested lists, NULL fields, a float that is
/// not finite as a string.
#[test]
fn structs_and_maps_load_as_json() {
    use arrow_array::builder::{Int64Builder, MapBuilder, StringBuilder};
    let db = shared_cluster().create_database("columnar_structs");
    let fields = arrow_schema::Fields::from(vec![
        Field::new("x", DataType::Int32, true),
        Field::new("y", DataType::Utf8, true),
        Field::new(
            "z",
            DataType::List(Arc::new(Field::new("item", DataType::Float64, true))),
            true,
        ),
    ]);
    let z = ListArray::from_iter_primitive::<arrow_array::types::Float64Type, _, _>(vec![
        Some(vec![Some(0.5), None]),
        Some(vec![Some(f64::NAN)]),
        None,
    ]);
    let point = StructArray::new(
        fields,
        vec![
            Arc::new(Int32Array::from(vec![Some(1), None, Some(3)])),
            Arc::new(StringArray::from(vec![Some("a \"q\""), Some("b"), None])),
            Arc::new(z),
        ],
        Some(vec![true, true, false].into()),
    );
    let mut tags = MapBuilder::new(None, StringBuilder::new(), Int64Builder::new());
    tags.keys().append_value("k");
    tags.values().append_value(7);
    tags.append(true).unwrap();
    tags.append(true).unwrap();
    tags.append(false).unwrap();
    let tags = tags.finish();
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("point", point.data_type().clone(), true),
        Field::new("tags", tags.data_type().clone(), true),
    ]);
    let batch = RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(Int64Array::from(vec![1, 2, 3])),
            Arc::new(point),
            Arc::new(tags),
        ],
    )
    .unwrap();
    let csv = "1,\"{\"\"x\"\": 1, \"\"y\"\": \"\"a \\\"\"q\\\"\"\"\", \"\"z\"\": [0.5, null]}\",\"{\"\"k\"\": 7}\"\n\
               2,\"{\"\"x\"\": null, \"\"y\"\": \"\"b\"\", \"\"z\"\": [\"\"NaN\"\"]}\",{}\n\
               3,,\n";
    db.client()
        .batch_execute(
            "CREATE TABLE t (id bigint, point jsonb, tags jsonb); \
             CREATE TABLE a (id bigint, point jsonb, tags jsonb); \
             CREATE TABLE j (id bigint, point json, tags text)",
        )
        .unwrap();
    copy_text(&db, "t", csv);
    let expected = rows(&db, "t");
    let dir = tempfile::tempdir().unwrap();
    let arrow = dir.path().join("structs.arrow");
    write_arrow_file(&arrow, std::slice::from_ref(&batch));
    for table in ["a", "j"] {
        let options = LoadRequest::new(vec![arrow.display().to_string()], table)
            .resolve(&connect(&db), &|_| None)
            .unwrap()
            .options;
        load(&db, &options).unwrap_or_else(|f| panic!("{table}: {}", f.error));
    }
    assert_eq!(rows(&db, "a"), expected);
    let json: Vec<String> = db
        .client()
        .query("SELECT point::text FROM j WHERE id = 1", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(json, ["{\"x\":1,\"y\":\"a \\\"q\\\"\",\"z\":[0.5,null]}"]);
    let parquet = dir.path().join("structs.parquet");
    write_parquet(&parquet, &batch, 2);
    let options = create(&db, &parquet, "made", &[]).unwrap();
    load(&db, &options).unwrap_or_else(|f| panic!("{}", f.error));
    assert_eq!(
        columns_of(&db, "made"),
        "id bigint, point jsonb, tags jsonb"
    );
    assert_eq!(rows(&db, "made"), expected);
}
