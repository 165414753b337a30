"""spark-submit entry point: publish the audited catalog (lakemeta.orchestration.steps.publish_catalog)."""

from lakemeta.orchestration.steps import job_parser, run_job

if __name__ == "__main__":
    parser = job_parser("publish_catalog")
    parser.add_argument("--audit", required=True, help="the quality gate's results (JSON): a path or URI")
    args = parser.parse_args()
    run_job(args, audit=args.audit)
