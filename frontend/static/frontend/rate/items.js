// What the rating page and the quiz both show: one side of a pair (a caption or a
// picture), and the notice line above the pair.

export function itemNode(item) {
  const box = document.createElement("figure");
  box.className = `item ${item.type}`;
  if (item.type === "caption") {
    const text = document.createElement("p");
    text.textContent = item.text;
    box.append(text);
  } else {
    const frame = document.createElement("div");
    frame.className = "frame";
    const img = document.createElement("img");
    img.alt = "Picture to compare";
    img.decoding = "async";
    // Known size reserves the box before the file arrives: no layout jump.
    if (item.width && item.height) {
      img.width = item.width;
      img.height = item.height;
      img.style.aspectRatio = `${item.width} / ${item.height}`;
    }
    img.src = item.url;
    frame.append(img);
    box.append(frame);
  }
  return box;
}

/** Show ``text`` in the notice line (an empty text hides it); ``kind`` "error" marks it. */
export function showNoticeIn(notice, text, kind = "info") {
  notice.hidden = !text;
  notice.textContent = text || "";
  notice.className = `notice ${kind === "error" ? "error" : ""}`;
}
