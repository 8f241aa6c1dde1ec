"""Readable terminal output for the CLI (tables are plain text: they must read well in CI logs too), one module for
each thing it renders: a plan and a submit (plans), a job and the job list (jobs), a job's attempts (attempts), what
a waiting job is doing (waiting) and the line that shows it live (progress), the health and cost reports (reports),
and the times they say (times). The width it fits comes from gpupilot.cli.layout; callers import from here."""

from __future__ import annotations

from gpupilot.cli.layout import fit_to as fit_to  # the CLI sets the width here, as before the layout had a module
from gpupilot.cli.layout import wrapped as wrapped
from gpupilot.cli.render.attempts import FINISHED as FINISHED
from gpupilot.cli.render.attempts import attempt_line as attempt_line
from gpupilot.cli.render.attempts import cost_rows as cost_rows
from gpupilot.cli.render.attempts import on_attempt as on_attempt
from gpupilot.cli.render.attempts import priced_numbers as priced_numbers
from gpupilot.cli.render.attempts import regional as regional
from gpupilot.cli.render.attempts import retry_words as retry_words
from gpupilot.cli.render.attempts import tried as tried
from gpupilot.cli.render.jobs import job_list as job_list
from gpupilot.cli.render.jobs import job_summary as job_summary
from gpupilot.cli.render.jobs import timeline_entries as timeline_entries
from gpupilot.cli.render.plans import launch_summary as launch_summary
from gpupilot.cli.render.plans import plan_table as plan_table
from gpupilot.cli.render.plans import submitted as submitted
from gpupilot.cli.render.progress import WaitProgress as WaitProgress
from gpupilot.cli.render.reports import costs as costs
from gpupilot.cli.render.reports import health as health
from gpupilot.cli.render.reports import summary_words as summary_words
from gpupilot.cli.render.times import elapsed as elapsed
from gpupilot.cli.render.waiting import earlier_diagnoses as earlier_diagnoses
from gpupilot.cli.render.waiting import next_action as next_action
from gpupilot.cli.render.waiting import progress_line as progress_line
from gpupilot.cli.render.waiting import reason_key as reason_key
from gpupilot.cli.render.waiting import reason_line as reason_line
from gpupilot.cli.render.waiting import status_line as status_line
from gpupilot.cli.render.waiting import status_since as status_since
from gpupilot.cli.render.waiting import waiting_reason as waiting_reason
