"""Small helpers shared by the pages: session state, running jobs with progress, rendering records."""
