"""`pgpour gen lineitem`'s CSV as Arrow, typed as a Parquet export of TPC-H
types lineitem (int64/int32 keys, decimal128(15,2) money, date32 dates),
written as an Arrow IPC file or as Parquet.

    python bench/lineitem.py CSV OUT.arrow
    python bench/lineitem.py CSV OUT.parquet ROW_GROUP_ROWS
"""
import sys

import pyarrow as pa
import pyarrow.csv as csv

NAMES = ["l_orderkey", "l_partkey", "l_suppkey", "l_linenumber", "l_quantity",
         "l_extendedprice", "l_discount", "l_tax", "l_returnflag", "l_linestatus",
         "l_shipdate", "l_commitdate", "l_receiptdate", "l_shipinstruct",
         "l_shipmode", "l_comment"]
MONEY = pa.decimal128(15, 2)
TYPES = {"l_orderkey": pa.int64(), "l_partkey": pa.int32(), "l_suppkey": pa.int32(),
         "l_linenumber": pa.int32(), "l_quantity": MONEY, "l_extendedprice": MONEY,
         "l_discount": MONEY, "l_tax": MONEY, "l_shipdate": pa.date32(),
         "l_commitdate": pa.date32(), "l_receiptdate": pa.date32()}


def read(path):
    return csv.read_csv(path, read_options=csv.ReadOptions(column_names=NAMES),
                        convert_options=csv.ConvertOptions(column_types=TYPES))


if __name__ == "__main__":
    table = read(sys.argv[1])
    out = sys.argv[2]
    if out.endswith(".parquet"):
        import pyarrow.parquet as pq
        pq.write_table(table, out, row_group_size=int(sys.argv[3]), compression="snappy")
    else:
        with pa.ipc.new_file(out, table.schema) as sink:
            sink.write_table(table, max_chunksize=65536)
