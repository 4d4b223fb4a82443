"""The tags every resource of the team carries."""

TEAM_TAGS = {"team": "vision", "costCenter": "cc-42"}
