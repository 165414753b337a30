"""spark-submit entry point: the quality gate over the catalog (lakemeta.orchestration.steps.audit_catalog);
it opens no Spark session, and prints the results' path for the publish job's --audit."""

from lakemeta.orchestration.steps import job_parser, run_job

if __name__ == "__main__":
    print(run_job(job_parser("audit_catalog").parse_args()))
