"""spark-submit entry point: a joinable-table search (lakemeta.orchestration.steps.joinable_search)."""

from lakemeta.config import add_joinable_query_arguments
from lakemeta.orchestration.steps import job_parser, run_job

if __name__ == "__main__":
    parser = job_parser("joinable_search")
    add_joinable_query_arguments(parser)
    parser.add_argument("--query-id", required=True)
    args = parser.parse_args()
    run_job(args, query=args.query, key=args.key, query_id=args.query_id, k=args.k, hash_bits=args.hash_bits)
