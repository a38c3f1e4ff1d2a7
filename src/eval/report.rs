//! Reports: Markdown, CSV, JSON and plots of a [`super::Report`].
