"""spark-submit entry point: the discovery step named by the first argument
(lakemeta.orchestration.steps.discover)."""

from lakemeta.orchestration.steps import job_parser, run_job
from lakemeta.registry import DISCOVERY_STEPS

if __name__ == "__main__":
    parser = job_parser("discover")
    parser.add_argument("step", choices=[step.name for step in DISCOVERY_STEPS])
    args = parser.parse_args()
    run_job(args, step=args.step)
