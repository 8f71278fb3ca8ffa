"""Tables, figures and Markdown/HTML reports built only from recorded tables."""
