"""The `lakemeta` command (docs/architecture.md, "The command line")."""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from lakemeta import __version__
from lakemeta.config import (
    Config,
    add_joinable_query_arguments,
    add_location_arguments,
    add_settings_argument,
    load_config,
    parse_settings,
)
from lakemeta.logs import configure_logging
from lakemeta.storage import StorageError

if TYPE_CHECKING:  # the pipeline imports pyspark: only commands that run Spark load it
    from lakemeta.orchestration.pipeline import Pipeline

log = logging.getLogger("lakemeta")

EXIT_OK = 0
EXIT_AUDIT_FAILED = 1
EXIT_USAGE = 2  # argparse's own code for a usage error; input errors share it
EXIT_INTERNAL = 3
EXIT_CODES_HELP = f"""exit codes:
  {EXIT_OK}  done
  {EXIT_AUDIT_FAILED}  the quality gate failed: nothing was published (run, rebuild), or a demo check failed
  {EXIT_USAGE}  usage or input error (a bad option, a missing table, column or path): the message says which
  {EXIT_INTERNAL}  internal error: the traceback is logged
"""
# What the library raises for what it was given: ValueError for a value it cannot use, FileNotFoundError
# for a path with nothing there, StorageError for a location it cannot reach. Anything else is a defect.
INPUT_ERRORS = (ValueError, FileNotFoundError, StorageError)


def _add_global_options(parser: argparse.ArgumentParser, after_command: bool) -> None:
    """The options every command takes, before or after its name. After it, an option is stored only when
    given (argparse copies every value a subcommand's parser holds over the main parser's), so that it
    overrides the same option given before and leaves it in force otherwise; its settings go to a list of
    their own, appended to those given before."""
    group = parser.add_argument_group("global options (before or after the command)")
    default = argparse.SUPPRESS if after_command else None
    group.add_argument(
        "--config", type=Path, default=default, help="the YAML configuration file (default: LAKEMETA_CONFIG)"
    )
    group.add_argument(
        "--master", default=default, help="Spark master (default local[*]; spark://host:7077 for a cluster)"
    )
    group.add_argument(
        "--remote",
        default=default,
        help="run on this Spark Connect server (sc://localhost:15002; `lakemeta connect-server` starts one)",
    )
    add_location_arguments(group, default=default)
    add_settings_argument(group, dest="settings_after_command" if after_command else "settings")


def _add_command(
    commands: argparse._SubParsersAction,
    name: str,
    description: str,
) -> argparse.ArgumentParser:
    command = commands.add_parser(
        name, help=description, epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    _add_global_options(command, after_command=True)
    return command


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lakemeta",
        description="Metadata of a data lake, kept current.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _add_global_options(parser, after_command=False)
    commands = parser.add_subparsers(dest="command", required=True)

    ingest = _add_command(commands, "ingest", "CSV / Parquet files or folders -> Delta tables in the lake")
    ingest.add_argument("sources", type=Path, nargs="+", help="files or folders")
    ingest.add_argument("--prefix", default="", help="put the tables under this folder of the lake")
    ingest.add_argument("--mode", choices=["error", "overwrite", "append"], default="error")
    ingest.add_argument("--separator", help="CSV field separator (default ,)")
    ingest.add_argument("--no-header", dest="header", action="store_false", default=None)
    ingest.add_argument("--quote", help='CSV quote character (default ")')
    ingest.add_argument("--escape", help='CSV escape character (default ")')
    ingest.add_argument("--encoding", help="CSV encoding (default UTF-8)")
    ingest.add_argument(
        "--all-text",
        action="store_true",
        default=None,  # unset: the configuration's ingest.all_text holds
        help="read every CSV column as text, as written (default: the inferred types where lossless)",
    )

    _add_command(commands, "run", "process pending batches, then refresh discovery results")
    rebuild = _add_command(commands, "rebuild", "drop state, recompute from the current snapshots")
    rebuild.add_argument(
        "--yes",
        action="store_true",
        help="drop the state without asking (needed when stdin is not a terminal)",
    )

    _add_command(
        commands,
        "maintain",
        "compact, checkpoint and VACUUM the catalog's tables, keeping maintenance.retention_days (no JVM)",
    )

    joinable = _add_command(commands, "joinable", "top-k tables joinable with a query table (MATE)")
    add_joinable_query_arguments(joinable)
    joinable.add_argument("--query-id", default="cli", help="results go to joinable_tables under this id")

    graph = _add_command(commands, "graph", "draw the schemas: accepted FKs per schema graph (no JVM)")
    graph.add_argument("--out", type=Path, default=Path("schemas.html"), help="the page to write (HTML)")
    graph.add_argument("--inds", action="store_true", help="draw the INDs within each schema too")

    export = _add_command(
        commands, "export", "write the catalog's datasets, keys, FKs and profiles for DataHub (no JVM)"
    )
    export.add_argument("target", choices=["datahub"], help="the metadata platform")
    export.add_argument(
        "--out", type=Path, default=Path("datahub-metadata.json"), help="the metadata file to write"
    )
    export.add_argument(
        "--server",
        help="send to this DataHub server (its GMS URL) instead of writing a file; a token from "
        "DATAHUB_GMS_TOKEN",
    )
    export.add_argument(
        "--lake-name", help="datasets are named <lake-name>.<table> (default: the lake folder's name)"
    )

    show = _add_command(commands, "show", "print a catalog table, or what each result reflects (no JVM)")
    show.add_argument(
        "table",
        help="catalog table, e.g. columns or state/hll_counters; freshness: the run and settings each "
        "result reflects, and whether it is current; published-versions: each table's published version "
        "and path, for any Delta reader",
    )
    show.add_argument(
        "--format",
        choices=["table", "json", "csv"],
        default="table",
        help="a text table (default); one JSON list of row objects; CSV with a header",
    )
    show.add_argument(
        "--limit", type=int, help="rows to print (default: 50 in a table, all in JSON and CSV; 0: all)"
    )
    time_travel = show.add_mutually_exclusive_group()
    time_travel.add_argument("--version", type=int, help="the table as of this Delta version")
    time_travel.add_argument(
        "--as-of", type=datetime.fromisoformat, help="the table as of this time (ISO 8601)"
    )
    time_travel.add_argument(
        "--latest",
        action="store_true",
        help="the latest version written, even if not yet audited and published (default: the published one)",
    )

    server = _add_command(
        commands, "connect-server", "serve Spark Connect for the DAGs and --remote (runs until stopped)"
    )
    server.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    server.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("LAKEMETA_CONNECT_PORT", "15002")),
        help="port to listen on (default $LAKEMETA_CONNECT_PORT, else 15002)",
    )

    warm = _add_command(
        commands,
        "warm-up",
        "warm a just-started Connect server (--remote): the pipeline on a tiny lake of its own",
    )
    warm.add_argument(
        "--wait", type=float, default=300, help="seconds to wait for the server to serve (default 300)"
    )

    demo = _add_command(commands, "demo", "build a demo lake, run the pipeline, change it, run again")
    demo.add_argument(
        "--workdir", type=Path, default=Path("demo-output"), help="where the lake and catalog go"
    )
    return parser


def config_of(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Config:
    """The configuration a command runs with: the file (``--config``, else LAKEMETA_CONFIG), the
    environment (``environ``, default the process's), the ``--set`` settings, then the other flags."""
    environ = dict(os.environ if environ is None else environ)
    if args.config is not None:
        environ["LAKEMETA_CONFIG"] = str(args.config)
    overrides = parse_settings(args.settings + args.settings_after_command)
    flags = {
        "lake": args.lake,
        "catalog": args.catalog,
        "spark_master": args.master,
        "spark_remote": args.remote,
    }
    overrides.update({key: value for key, value in flags.items() if value is not None})
    if args.command == "ingest":
        ingest_flags = {
            k: getattr(args, k) for k in ("separator", "header", "quote", "escape", "encoding", "all_text")
        }
        given = {key: value for key, value in ingest_flags.items() if value is not None}
        overrides["ingest"] = {**overrides.get("ingest", {}), **given}
    return load_config(overrides, environ)


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command; the exit code is one of EXIT_CODES_HELP's (argparse exits with 2 itself)."""
    args = build_parser().parse_args(argv)
    configure_logging()
    try:
        return COMMANDS[args.command](args, config_of(args))
    except INPUT_ERRORS as error:
        print(f"lakemeta {args.command}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except Exception:
        log.exception("lakemeta %s: internal error", args.command)
        return EXIT_INTERNAL


def _ingest(args: argparse.Namespace, config: Config) -> int:
    from lakemeta.lake.ingest import find_sources, ingest
    from lakemeta.spark import get_session

    if config.lake is None:
        raise ValueError("--lake (or LAKEMETA_LAKE) is required")
    sources = find_sources(args.sources, args.prefix)
    spark = get_session(
        config.spark_master, "lakemeta ingest", locations=[config.lake], remote=config.spark_remote
    )
    results = ingest(spark, config.lake, sources, config.ingest, args.mode)
    rows = sum(r.rows for r in results)
    quarantined = sum(r.quarantined for r in results)
    skipped = sum(r.already_appended for r in results)
    print(
        f"ingested {len(results) - skipped} tables, {rows} rows; {quarantined} malformed records quarantined"
        + (f"; {skipped} files already appended, skipped" if skipped else "")
    )
    return EXIT_OK


def _pipeline(config: Config, metastore: bool = False) -> Pipeline:
    from lakemeta.orchestration.pipeline import Pipeline
    from lakemeta.spark import get_session, metastore_conf

    lake, catalog = config.require_paths()
    extra_conf = metastore_conf(config.metastore_uri) if metastore else None
    spark = get_session(
        config.spark_master,
        "lakemeta",
        catalog=catalog,
        extra_conf=extra_conf,
        locations=[lake],
        remote=config.spark_remote,
    )
    return Pipeline(spark, config)


def _audit_and_publish(pipeline: Pipeline) -> int:
    """Write-audit-publish's last two steps; EXIT_AUDIT_FAILED (nothing published) when the gate fails."""
    audit = pipeline.audit()
    where = f"results in {audit.path}" + (
        "" if audit.data_docs is None else f", Data Docs in {audit.data_docs}"
    )
    if not audit.success:
        print(f"quality gate failed, nothing published; {where}:", file=sys.stderr)
        print("\n".join(f"  {failure}" for failure in audit.failures), file=sys.stderr)
        return EXIT_AUDIT_FAILED
    n_tables = pipeline.publish(audit)
    print(f"quality gate passed; {n_tables} catalog tables published ({where})")
    return EXIT_OK


def _run(args: argparse.Namespace, config: Config) -> int:
    from lakemeta.orchestration.pipeline import Pipeline

    planner = Pipeline(None, config)  # Delta logs only: no JVM is started for nothing to do
    if planner.detect_batches() is None and planner.results_current():
        print("no table changed; every result is current and published")
        return EXIT_OK
    pipeline = _pipeline(config, metastore=True)  # its run continues the run planned here
    plan = pipeline.run()
    print("no table changed" if plan is None else f"run {plan.run_id}: {len(plan.batches)} tables changed")
    return _audit_and_publish(pipeline)


def _rebuild(args: argparse.Namespace, config: Config) -> int:
    if not args.yes:
        _confirm_rebuild(config)
    pipeline = _pipeline(config, metastore=True)
    plan = pipeline.rebuild()
    tables = 0 if plan is None else len(plan.batches)
    print(f"rebuilt state from {tables} tables" + ("" if plan is None else f" (run {plan.run_id})"))
    return _audit_and_publish(pipeline)


def _confirm_rebuild(config: Config) -> None:
    """Ask for the word `rebuild`, as the DAG's trigger form does; a ValueError (nothing dropped) when it is
    not typed, or when no one can type it (stdin is not a terminal: a script says --yes)."""
    _, catalog = config.require_paths()
    if not sys.stdin.isatty():
        raise ValueError("rebuild drops all state and stdin is not a terminal: give --yes; nothing dropped")
    try:
        answer = input(f"rebuild drops all state under {catalog / 'state'}; type rebuild to go on: ")
    except EOFError:  # Ctrl-D at the prompt
        answer = ""
    if answer.strip() != "rebuild":
        raise ValueError("not confirmed; nothing dropped")


def _maintain(args: argparse.Namespace, config: Config) -> int:
    from lakemeta.orchestration.maintenance import maintain_tables

    if config.catalog is None:
        raise ValueError("--catalog (or LAKEMETA_CATALOG) is required")
    maintained = maintain_tables(config.catalog, config.maintenance.retention)
    done = maintained.tables
    rebucketed = [t.table for t in done if t.rebucketed]
    print(
        f"{len(done)} tables maintained: {sum(t.files_before for t in done)} data files before, "
        f"{sum(t.files_after for t in done)} after, {sum(t.vacuumed for t in done)} deleted by VACUUM"
        + (f"; rewritten partitioned by table bucket: {', '.join(rebucketed)}" if rebucketed else "")
        + f"; {len(maintained.results_deleted)} old results files of the quality gate deleted"
    )
    return EXIT_OK


def _joinable(args: argparse.Namespace, config: Config) -> int:
    from lakemeta.joinsearch.discover import format_matches, parse_key_columns

    keys = parse_key_columns(args.key)
    k = config.joinsearch.k if args.k is None else args.k
    hash_bits = args.hash_bits or config.joinsearch.hash_bits
    matches = _pipeline(config).search_joinable(str(args.query), keys, k, hash_bits, args.query_id)
    print(format_matches(matches))
    return EXIT_OK


def _graph(args: argparse.Namespace, config: Config) -> int:
    from lakemeta.fks.schema_view import write_catalog_page

    if config.catalog is None:
        raise ValueError("--catalog (or LAKEMETA_CATALOG) is required")
    overview, views = write_catalog_page(config.catalog, args.out, config.fks.schema_of, args.inds)
    print(
        f"{len(overview)} schemas, {sum(info['fks'] for info in overview.values())} accepted FKs, "
        f"{len(views)} schema graphs drawn in {args.out}"
    )
    return EXIT_OK


def _export(args: argparse.Namespace, config: Config) -> int:
    from lakemeta.export.datahub import export

    if config.catalog is None:
        raise ValueError("--catalog (or LAKEMETA_CATALOG) is required")
    lake_name = args.lake_name or (config.lake.name if config.lake is not None else "lake")
    made = export(config.catalog, lake_name, args.out, args.server, os.environ.get("DATAHUB_GMS_TOKEN"))
    print(
        f"{made} metadata change proposals " + (f"sent to {args.server}" if args.server else f"in {args.out}")
    )
    return EXIT_OK


def _show(args: argparse.Namespace, config: Config) -> int:
    from lakemeta.show import (
        FRESHNESS,
        PUBLISHED_VERSIONS,
        format_csv,
        format_json,
        format_table,
        freshness_rows,
        published_version_rows,
        read_catalog_rows,
    )

    if config.catalog is None:
        raise ValueError("--catalog (or LAKEMETA_CATALOG) is required")
    if args.table == FRESHNESS:
        rows = freshness_rows(config)
    elif args.table == PUBLISHED_VERSIONS:
        rows = published_version_rows(config.catalog)
    else:
        rows = read_catalog_rows(
            config.catalog, args.table, args.version, args.as_of, published=not args.latest
        )
    limit = (50 if args.format == "table" else 0) if args.limit is None else args.limit
    if args.format == "table":
        print(format_table(rows.to_pandas(), limit or None))  # says itself how many rows it left out
        return EXIT_OK
    print((format_json if args.format == "json" else format_csv)(rows.slice(0, limit or None)))
    if 0 < limit < rows.num_rows:  # stderr: the output stays valid JSON or CSV
        print(f"{rows.num_rows - limit} more rows not printed ({rows.num_rows} in all)", file=sys.stderr)
    return EXIT_OK


def _connect_server(args: argparse.Namespace, config: Config) -> int:
    from lakemeta.spark.connect import serve

    serve(config, args.host, args.port)  # does not return: the process becomes the server
    return EXIT_OK


def _warm_up(args: argparse.Namespace, config: Config) -> int:
    from lakemeta.orchestration.warm_up import warm_up
    from lakemeta.spark import get_session
    from lakemeta.spark.serving import wait_until_serving_url

    if not config.spark_remote:
        raise ValueError("warm-up warms a Spark Connect server: give --remote (or LAKEMETA_SPARK_REMOTE)")
    wait_until_serving_url(config.spark_remote, args.wait)
    seconds = warm_up(get_session(remote=config.spark_remote, app_name="lakemeta warm-up"), config)
    print(f"Spark Connect server warmed up in {seconds:.1f} s")
    return EXIT_OK


def _demo(args: argparse.Namespace, config: Config) -> int:
    from lakemeta.demo import run_demo

    return run_demo(args.workdir.resolve(), config)


COMMANDS = {
    "ingest": _ingest,
    "run": _run,
    "rebuild": _rebuild,
    "maintain": _maintain,
    "joinable": _joinable,
    "graph": _graph,
    "show": _show,
    "export": _export,
    "connect-server": _connect_server,
    "warm-up": _warm_up,
    "demo": _demo,
}


def console() -> None:
    """The ``lakemeta`` command: ``main``, then the exit. A run leaves some 400,000 objects (pyspark,
    pandas, Great Expectations, the catalog's frames), and the interpreter's last garbage collection at
    exit walked them all, seconds spent on nothing (docs/performance.md, "Measurements behind the code");
    frozen, they are left to the process's end, which frees their memory anyway."""
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    console()
