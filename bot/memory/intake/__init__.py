"""What comes in: the write-behind queue, its spill files, channel rules and the recent-lines window."""
