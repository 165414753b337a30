"""spark-submit entry point: read a run's batches once for all state components
(lakemeta.orchestration.steps.scan_batches)."""

from lakemeta.orchestration.steps import job_parser, run_job

if __name__ == "__main__":
    run_job(job_parser("scan_batches").parse_args())
