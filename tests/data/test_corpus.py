from keras_bert.data import (
    prose_to_sentences,
    pydoc_topics_documents,
    read_documents,
    split_sentences,
    write_corpus,
)


def test_split_sentences_keeps_abbreviations_and_initials():
    text = ("The result, e.g. a list, is returned. Dr. Smith wrote it!  Does J. R. "
            "Tolkien count? \"Yes.\" (It does.) 3 items remain.")
    assert split_sentences(text) == [
        "The result, e.g. a list, is returned.",
        "Dr. Smith wrote it!",
        "Does J. R. Tolkien count?",
        '"Yes."',
        "(It does.)",
        "3 items remain.",
    ]
    assert split_sentences("version 3.11 is new. lower case next") == [
        "version 3.11 is new. lower case next"]
    assert split_sentences("   ") == []


def test_prose_to_sentences_drops_underlines_and_keeps_code_lines():
    text = ('The "for" statement\n*******************\n\nIt loops over\nitems. It may '
            'stop.\n\n   for i in range(3):\n       print(i)\n')
    assert prose_to_sentences(text) == [
        'The "for" statement', "It loops over items.", "It may stop.",
        "for i in range(3):", "print(i)"]


def test_pydoc_topics_round_trip_through_the_corpus_format(tmp_path):
    documents = pydoc_topics_documents()
    assert len(documents) == 79
    names = [name for name, _ in documents]
    assert names == sorted(names) and "for" in names
    sentences = dict(documents)["for"]
    assert sentences[0] == 'The "for" statement'
    assert "for_stmt ::= \"for\" target_list \"in\" starred_list \":\" suite" in sentences
    path = tmp_path / "corpus.txt"
    assert write_corpus([s for _, s in documents] + [[], ["  "]], path) == 79
    text = path.read_text(encoding="utf-8")
    assert "\n\n\n" not in text and text.count("\n\n") == 78
    assert list(read_documents([str(path)])) == [
        [" ".join(s.split()) for s in sents] for _, sents in documents]


def test_read_documents_streams_across_files(tmp_path):
    (tmp_path / "a.txt").write_text("a1\na2\n\n\nb1\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("  \nc1\n  c2  \n", encoding="utf-8")
    stream = read_documents([str(tmp_path / "a.txt"), str(tmp_path / "b.txt")])
    assert next(stream) == ["a1", "a2"]  # A generator: one document at a time.
    assert list(stream) == [["b1"], ["c1", "c2"]]
