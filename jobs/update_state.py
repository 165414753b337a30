"""spark-submit entry point: apply the run's batches to the state component named by the first argument
(lakemeta.orchestration.steps.update_state)."""

from lakemeta.orchestration.steps import job_parser, run_job
from lakemeta.registry import STATE_COMPONENTS

if __name__ == "__main__":
    parser = job_parser("update_state")
    parser.add_argument("component", choices=[entry.name for entry in STATE_COMPONENTS])
    args = parser.parse_args()
    run_job(args, component=args.component)
